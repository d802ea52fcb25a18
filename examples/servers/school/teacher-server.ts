/**
 * School teacher MCP server: the current teacher's classes, timetable, homework and attendance.
 *
 *   node dist/examples/servers/school/teacher-server.js [--stdio] [--data FILE]
 *   node dist/examples/servers/school/teacher-server.js --http [--port N] [--data FILE]   → TEACHER_SERVER_URL=…
 *
 * "The current teacher" is the `id` of the user context in `_meta` when the host sends one, else env
 * SCHOOL_DEFAULT_TEACHER, else Tom Teacher (u-tom); teachers only act on classes they teach.
 *
 * assign_homework does not send mail (servers never talk to each other, seeds §9.1): it returns the
 * enrolled students and a ready `notify` block ({ template, recipients, variables }) the host can
 * hand to the comms server's send_bulk (pattern 5).
 *
 * Annotations: assign_homework adds homework (not destructive, not idempotent); mark_attendance
 * replaces the class's attendance for that date (destructive, but idempotent: the same list twice
 * leaves the same record); list_students only reads. openWorldHint is false everywhere.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { legacyRegistrar, runServer } from './common';
import { DomainError, effectTool, isIsoDate, jsonResourceOf, ofTenant, ok, readTool, type Caller, type Runtime } from './core';
import { newId, SEED, type AttendanceRecord, type Homework, type SchoolClass, type SchoolData, type User, type Weekday } from './store';

export function currentTeacher(rt: Runtime, data: SchoolData, caller: Caller): User {
  const id = caller.userId ?? (rt.env.SCHOOL_DEFAULT_TEACHER || SEED.users.tom);
  const user = data.users.find((u) => u.tenantId === caller.tenantId && u.id === id);
  if (!user) throw new DomainError(`No teacher "${id}" in this school`);
  if (user.role !== 'teacher') throw new DomainError(`${user.name} (${user.id}) is a ${user.role}, not a teacher`);
  return user;
}

/** The class by id or (case-insensitive) name, which the current teacher must teach. */
function classOf(data: SchoolData, caller: Caller, teacher: User, classId?: string, name?: string): SchoolClass {
  if (classId === undefined && name === undefined) throw new DomainError('Give a classId or a className');
  const classes = ofTenant(data.classes, caller.tenantId);
  const cls =
    classId !== undefined
      ? classes.find((c) => c.id === classId)
      : classes.find((c) => c.name.trim().toLowerCase() === (name ?? '').trim().toLowerCase());
  if (!cls) throw new DomainError(`No such class "${classId ?? name ?? ''}"`);
  if (cls.teacherId !== teacher.id) throw new DomainError(`${cls.name} is not taught by ${teacher.name}`);
  return cls;
}

function studentsOf(data: SchoolData, cls: SchoolClass): Array<{ id: string; name: string; email: string | null }> {
  const ids = ofTenant(data.enrolments, cls.tenantId)
    .filter((e) => e.classId === cls.id)
    .map((e) => e.studentId);
  return ofTenant(data.users, cls.tenantId)
    .filter((u) => ids.includes(u.id) && u.role === 'student')
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((u) => ({ id: u.id, name: u.name, email: u.email ?? null }));
}

const DAY_ORDER: Record<Weekday, number> = { Mon: 0, Tue: 1, Wed: 2, Thu: 3, Fri: 4 };

const classSelector = {
  classId: z.string().min(1).max(100).optional().describe('Class id, e.g. "c-english-101"'),
  className: z.string().min(1).max(100).optional().describe('Class name, e.g. "English 101" (if no classId)'),
};

export function createTeacherServer(rt: Runtime): McpServer {
  const server = new McpServer({ name: 'school-teacher', version: '0.1.0' });
  const tools = legacyRegistrar(server);

  effectTool(
    rt,
    tools,
    'assign_homework',
    {
      title: 'Assign homework',
      description:
        'Creates homework for one of your classes. Returns the homework, the enrolled students and a `notify` block ' +
        '{ template, recipients, variables } to pass to the comms send_bulk tool. It sends no email itself.',
      inputSchema: {
        ...classSelector,
        title: z.string().trim().min(1).max(200).describe('Homework title'),
        dueDate: z.string().describe('Due date, YYYY-MM-DD'),
        description: z.string().trim().max(5_000).optional().describe('Instructions'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (draft, { classId, className, title, dueDate, description }, caller, now) => {
      if (!isIsoDate(dueDate)) throw new DomainError(`dueDate must be a date as YYYY-MM-DD, got "${dueDate}"`);
      const teacher = currentTeacher(rt, draft, caller);
      const cls = classOf(draft, caller, teacher, classId, className);
      const homework: Homework = {
        id: newId('hw-', draft.homework),
        tenantId: caller.tenantId,
        classId: cls.id,
        title,
        ...(description ? { description } : {}),
        dueDate,
        assignedBy: teacher.id,
        createdAt: now,
      };
      draft.homework.push(homework);
      const students = studentsOf(draft, cls);
      return ok({
        message: `Assigned "${title}" to ${cls.name} (${students.length} students), due ${dueDate}. Email them with comms send_bulk using "notify".`,
        homework,
        class: { id: cls.id, name: cls.name },
        teacher: { id: teacher.id, name: teacher.name },
        students,
        notify: {
          template: 'homework_assigned',
          recipients: students.flatMap((s) => (s.email ? [s.email] : [])),
          variables: { homework_title: title, due_date: dueDate, class_name: cls.name, teacher_name: teacher.name },
        },
      });
    },
  );

  effectTool(
    rt,
    tools,
    'mark_attendance',
    {
      title: 'Mark attendance',
      description:
        'Records who was present in one of your classes on a date; every other enrolled student is absent. ' +
        'Marking the same class and date again replaces the record.',
      inputSchema: {
        ...classSelector,
        date: z.string().describe('Lesson date, YYYY-MM-DD'),
        present: z.array(z.string().min(1).max(100)).max(500).describe('Ids of the students who were present'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    (draft, { classId, className, date, present }, caller, now) => {
      if (!isIsoDate(date)) throw new DomainError(`date must be a date as YYYY-MM-DD, got "${date}"`);
      const teacher = currentTeacher(rt, draft, caller);
      const cls = classOf(draft, caller, teacher, classId, className);
      const enrolled = studentsOf(draft, cls).map((s) => s.id);
      const unknown = present.filter((id) => !enrolled.includes(id));
      if (unknown.length > 0) throw new DomainError(`Not enrolled in ${cls.name}: ${unknown.join(', ')}`);
      const presentSet = [...new Set(present)];
      const record: AttendanceRecord = {
        id: newId('att-', draft.attendance),
        tenantId: caller.tenantId,
        classId: cls.id,
        date,
        present: presentSet,
        absent: enrolled.filter((id) => !presentSet.includes(id)),
        markedBy: teacher.id,
        markedAt: now,
      };
      const existing = draft.attendance.findIndex((a) => a.tenantId === caller.tenantId && a.classId === cls.id && a.date === date);
      if (existing >= 0) {
        record.id = draft.attendance[existing]?.id ?? record.id;
        draft.attendance[existing] = record;
      } else draft.attendance.push(record);
      return ok({
        message: `Attendance for ${cls.name} on ${date}: ${record.present.length} present, ${record.absent.length} absent`,
        attendance: record,
      });
    },
  );

  readTool(
    rt,
    tools,
    'list_students',
    {
      title: 'List students',
      description: 'Lists the students (id, name, email) of one of your classes, or of all of them.',
      inputSchema: classSelector,
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ classId, className }, { caller, data }) => {
      const teacher = currentTeacher(rt, data, caller);
      const classes =
        classId === undefined && className === undefined
          ? ofTenant(data.classes, caller.tenantId).filter((c) => c.teacherId === teacher.id)
          : [classOf(data, caller, teacher, classId, className)];
      return ok({ classes: classes.map((c) => ({ id: c.id, name: c.name, students: studentsOf(data, c) })) });
    },
  );

  jsonResourceOf(
    rt,
    tools,
    'my_classes',
    'teacher://my_classes',
    { title: 'My classes', description: "The current teacher's classes with their students and homework." },
    (data, caller) => {
      const teacher = currentTeacher(rt, data, caller);
      return ofTenant(data.classes, caller.tenantId)
        .filter((c) => c.teacherId === teacher.id)
        .map((c) => ({
          id: c.id,
          name: c.name,
          room: c.room ?? null,
          students: studentsOf(data, c),
          homework: ofTenant(data.homework, caller.tenantId)
            .filter((h) => h.classId === c.id)
            .map((h) => ({ id: h.id, title: h.title, dueDate: h.dueDate })),
        }));
    },
  );

  jsonResourceOf(
    rt,
    tools,
    'my_timetable',
    'teacher://my_timetable',
    { title: 'My timetable', description: "The current teacher's weekly timetable." },
    (data, caller) => {
      const teacher = currentTeacher(rt, data, caller);
      const mine = new Map(ofTenant(data.classes, caller.tenantId).filter((c) => c.teacherId === teacher.id).map((c) => [c.id, c.name]));
      return ofTenant(data.timetable, caller.tenantId)
        .filter((s) => mine.has(s.classId))
        .sort((a, b) => DAY_ORDER[a.day] - DAY_ORDER[b.day] || a.start.localeCompare(b.start))
        .map((s) => ({ day: s.day, start: s.start, end: s.end, room: s.room, classId: s.classId, className: mine.get(s.classId) ?? s.classId }));
    },
  );

  return server;
}

if (require.main === module) runServer({ name: 'teacher', urlVariable: 'TEACHER_SERVER_URL', create: createTeacherServer });
