/**
 * School student MCP server: the current student's grades, schedule, homework and progress, homework
 * submission, and a (canned, demo-only) tutor.
 *
 *   node dist/examples/servers/school/student-server.js [--stdio] [--data FILE]
 *   node dist/examples/servers/school/student-server.js --http [--port N] [--data FILE]   → STUDENT_SERVER_URL=…
 *
 * "The current student" is the `id` of the user context in `_meta` when the host sends one, else env
 * SCHOOL_DEFAULT_STUDENT, else Bob Brown (u-bob). It must be a student of the caller's tenant.
 *
 * Annotations: view_grades and ask_tutor only read (ask_tutor's answers are canned: idempotent);
 * submit_homework adds a submission (not destructive, not idempotent: submitting twice is a
 * resubmission). openWorldHint is false everywhere.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { legacyRegistrar, runServer } from './common';
import { DomainError, effectTool, jsonResourceOf, ofTenant, ok, readTool, type Caller, type Runtime } from './core';
import { newId, SEED, type SchoolData, type User, type Weekday } from './store';

export function currentStudent(rt: Runtime, data: SchoolData, caller: Caller, requested?: string): User {
  const id = requested ?? caller.userId ?? (rt.env.SCHOOL_DEFAULT_STUDENT || SEED.users.bob);
  const user = data.users.find((u) => u.tenantId === caller.tenantId && u.id === id);
  if (!user) throw new DomainError(`No student "${id}" in this school`);
  if (user.role !== 'student') throw new DomainError(`${user.name} (${user.id}) is a ${user.role}, not a student`);
  return user;
}

function enrolledClassIds(data: SchoolData, student: User): string[] {
  return ofTenant(data.enrolments, student.tenantId)
    .filter((e) => e.studentId === student.id)
    .map((e) => e.classId);
}

function className(data: SchoolData, tenantId: string, classId: string): string {
  return data.classes.find((c) => c.tenantId === tenantId && c.id === classId)?.name ?? classId;
}

const DAY_ORDER: Record<Weekday, number> = { Mon: 0, Tue: 1, Wed: 2, Thu: 3, Fri: 4 };

function percent(score: number, max: number): number {
  return max > 0 ? Math.round((score / max) * 1000) / 10 : 0;
}

function gradesOf(data: SchoolData, student: User): Record<string, unknown> {
  const grades = ofTenant(data.grades, student.tenantId)
    .filter((g) => g.studentId === student.id)
    .map((g) => ({
      classId: g.classId,
      className: className(data, student.tenantId, g.classId),
      assessment: g.assessment,
      score: g.score,
      maxScore: g.maxScore,
      percent: percent(g.score, g.maxScore),
      gradedAt: g.gradedAt,
    }));
  const average = grades.length === 0 ? null : Math.round((grades.reduce((sum, g) => sum + g.percent, 0) / grades.length) * 10) / 10;
  return { student: { id: student.id, name: student.name }, grades, averagePercent: average };
}

/** Canned answers by topic: a stand-in, clearly labelled, never presented as a real tutor. */
const TUTOR_ANSWERS: Array<{ pattern: RegExp; topic: string; answer: string }> = [
  {
    pattern: /present perfect|have (been|done|gone)|has (been|done)/i,
    topic: 'present perfect',
    answer:
      'The present perfect is "have/has + past participle" (I have finished). Use it for experiences ' +
      '(I have visited Rome), for changes up to now (She has grown) and with "for/since" (We have lived here since 2020). ' +
      'For a finished time in the past, use the past simple instead (I visited Rome last year).',
  },
  {
    pattern: /past simple|past tense|yesterday|\bago\b/i,
    topic: 'past simple',
    answer: 'The past simple describes finished actions at a known time: "I walked home yesterday". Regular verbs add -ed; irregular ones must be learned (go → went).',
  },
  {
    pattern: /fraction|algebra|equation|math/i,
    topic: 'maths',
    answer: 'Work step by step: write down what you know, do the same operation on both sides of an equation, and check your answer by substituting it back.',
  },
];

export function tutorAnswer(question: string): { topic: string; answer: string } {
  const hit = TUTOR_ANSWERS.find((a) => a.pattern.test(question));
  if (hit) return { topic: hit.topic, answer: hit.answer };
  return { topic: 'general', answer: 'Break the question into small parts, look at an example in your course book, and ask your teacher in class about the part that is still unclear.' };
}

export function createStudentServer(rt: Runtime): McpServer {
  const server = new McpServer({ name: 'school-student', version: '0.1.0' });
  const tools = legacyRegistrar(server);

  readTool(
    rt,
    tools,
    'view_grades',
    {
      title: 'View grades',
      description: "Shows a student's grades (default: the current student) with percentages and the average.",
      inputSchema: {
        studentId: z.string().min(1).max(100).optional().describe('Student id; default the current student'),
      },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ studentId }, { caller, data }) => {
      if (caller.role === 'student' && caller.userId !== undefined && studentId !== undefined && studentId !== caller.userId) {
        throw new DomainError('Students can only view their own grades');
      }
      return ok(gradesOf(data, currentStudent(rt, data, caller, studentId)));
    },
  );

  effectTool(
    rt,
    tools,
    'submit_homework',
    {
      title: 'Submit homework',
      description: 'Hands in homework for the current student. Submitting again records a resubmission.',
      inputSchema: {
        homeworkId: z.string().min(1).max(100).describe('Homework id (see the student://homework resource)'),
        content: z.string().min(1).max(20_000).describe('The answer text'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (draft, { homeworkId, content }, caller, now) => {
      const student = currentStudent(rt, draft, caller);
      const homework = draft.homework.find((h) => h.tenantId === caller.tenantId && h.id === homeworkId);
      if (!homework) throw new DomainError(`Unknown homework "${homeworkId}"`);
      if (!enrolledClassIds(draft, student).includes(homework.classId)) {
        throw new DomainError(`${student.name} is not enrolled in ${className(draft, caller.tenantId, homework.classId)}`);
      }
      const attempt = draft.submissions.filter((s) => s.tenantId === caller.tenantId && s.homeworkId === homeworkId && s.studentId === student.id).length + 1;
      const submission = { id: newId('sub-', draft.submissions), tenantId: caller.tenantId, homeworkId, studentId: student.id, content, attempt, submittedAt: now };
      draft.submissions.push(submission);
      return ok({
        message: `${attempt === 1 ? 'Submitted' : `Resubmitted (attempt ${attempt})`} "${homework.title}" for ${student.name}`,
        submission: { id: submission.id, homeworkId, studentId: student.id, attempt, submittedAt: now },
      });
    },
  );

  readTool(
    rt,
    tools,
    'ask_tutor',
    {
      title: 'Ask the tutor (demo)',
      description: 'Answers a study question with a canned demo answer (no AI model is consulted; the answer says so).',
      inputSchema: { question: z.string().trim().min(1).max(2_000).describe('The question') },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ question }) => {
      const { topic, answer } = tutorAnswer(question);
      return ok({
        demo: true,
        topic,
        answer: `[Demo tutor: canned answer, no AI model was consulted] ${answer}`,
        question,
      });
    },
  );

  jsonResourceOf(
    rt,
    tools,
    'profile',
    'student://profile',
    { title: 'Student profile', description: 'The current student: name, email and enrolled classes.' },
    (data, caller) => {
      const student = currentStudent(rt, data, caller);
      return {
        id: student.id,
        name: student.name,
        email: student.email ?? null,
        classes: enrolledClassIds(data, student).map((id) => {
          const cls = data.classes.find((c) => c.tenantId === caller.tenantId && c.id === id);
          const teacher = data.users.find((u) => u.tenantId === caller.tenantId && u.id === cls?.teacherId);
          return { id, name: cls?.name ?? id, teacher: teacher?.name ?? null };
        }),
      };
    },
  );

  jsonResourceOf(
    rt,
    tools,
    'schedule',
    'student://schedule',
    { title: 'Student schedule', description: "The current student's weekly timetable." },
    (data, caller) => {
      const student = currentStudent(rt, data, caller);
      const classIds = enrolledClassIds(data, student);
      return ofTenant(data.timetable, caller.tenantId)
        .filter((s) => classIds.includes(s.classId))
        .sort((a, b) => DAY_ORDER[a.day] - DAY_ORDER[b.day] || a.start.localeCompare(b.start))
        .map((s) => ({ day: s.day, start: s.start, end: s.end, room: s.room, classId: s.classId, className: className(data, caller.tenantId, s.classId) }));
    },
  );

  jsonResourceOf(
    rt,
    tools,
    'homework',
    'student://homework',
    { title: 'Student homework', description: "The current student's homework, with whether it was handed in." },
    (data, caller) => {
      const student = currentStudent(rt, data, caller);
      const classIds = enrolledClassIds(data, student);
      return ofTenant(data.homework, caller.tenantId)
        .filter((h) => classIds.includes(h.classId))
        .sort((a, b) => a.dueDate.localeCompare(b.dueDate))
        .map((h) => {
          const mine = ofTenant(data.submissions, caller.tenantId).filter((s) => s.homeworkId === h.id && s.studentId === student.id);
          return {
            id: h.id,
            title: h.title,
            description: h.description ?? null,
            classId: h.classId,
            className: className(data, caller.tenantId, h.classId),
            dueDate: h.dueDate,
            submitted: mine.length > 0,
            lastSubmittedAt: mine.at(-1)?.submittedAt ?? null,
          };
        });
    },
  );

  jsonResourceOf(
    rt,
    tools,
    'progress',
    'student://progress',
    { title: 'Student progress', description: 'Per class: average grade, homework handed in, attendance.' },
    (data, caller) => {
      const student = currentStudent(rt, data, caller);
      const t = caller.tenantId;
      const classes = enrolledClassIds(data, student).map((classId) => {
        const grades = ofTenant(data.grades, t).filter((g) => g.studentId === student.id && g.classId === classId);
        const homework = ofTenant(data.homework, t).filter((h) => h.classId === classId);
        const handedIn = homework.filter((h) => data.submissions.some((s) => s.tenantId === t && s.homeworkId === h.id && s.studentId === student.id));
        const sessions = ofTenant(data.attendance, t).filter((a) => a.classId === classId);
        const present = sessions.filter((a) => a.present.includes(student.id)).length;
        return {
          classId,
          className: className(data, t, classId),
          averagePercent: grades.length === 0 ? null : Math.round((grades.reduce((s, g) => s + percent(g.score, g.maxScore), 0) / grades.length) * 10) / 10,
          homework: { assigned: homework.length, submitted: handedIn.length },
          attendance: { sessions: sessions.length, present },
        };
      });
      return { student: { id: student.id, name: student.name }, classes };
    },
  );

  server.registerPrompt(
    'student_persona',
    { title: 'Student tutor persona', description: 'System prompt for the student study assistant.' },
    () => ({
      description: 'Student study assistant',
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: [
              'You are a friendly study assistant for a language school student.',
              '',
              '- Explain simply, with short examples; encourage, never do the homework for the student.',
              '- Use the student resources (profile, schedule, homework, progress) to answer questions about their studies.',
              '- Use view_grades for grades, submit_homework only when the student asks to hand something in, ask_tutor for study help.',
              '- Only discuss this student\'s own data.',
            ].join('\n'),
          },
        },
      ],
    }),
  );

  return server;
}

if (require.main === module) runServer({ name: 'student', urlVariable: 'STUDENT_SERVER_URL', create: createStudentServer });
