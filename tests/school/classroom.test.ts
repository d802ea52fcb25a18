/**
 * The seeds' pattern 5 and the classroom servers: teacher assign_homework hands the enrolled
 * students to the host, which gives them to comms send_bulk (servers never call each other); the
 * student sees the homework and hands it in. Also attendance, grades and the demo tutor.
 */
import { readStore, SEED } from '../../examples/servers/school/store';
import { bodyOf, buildSchoolServers, callTool, connectStdio, readJsonResource, tempDir, textOf, type Connected } from './helpers';

jest.setTimeout(60_000);

const tmp = tempDir();
const dataFile = tmp.file();
let teacher: Connected;
let comms: Connected;
let student: Connected;

beforeAll(async () => {
  const scripts = await buildSchoolServers();
  [teacher, comms, student] = await Promise.all([
    connectStdio(scripts.teacher, dataFile),
    connectStdio(scripts.comms, dataFile),
    connectStdio(scripts.student, dataFile),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.all([teacher?.close(), comms?.close(), student?.close()]);
  tmp.remove();
});

interface Notify {
  template: string;
  recipients: string[];
  variables: Record<string, string>;
}

test('assign_homework → send_bulk: each student emailed exactly once per key', async () => {
  const assigned = bodyOf<{ homework: { id: string; classId: string }; students: Array<{ id: string; email: string }>; notify: Notify }>(
    await callTool(teacher.client, 'assign_homework', { className: 'english 101', title: 'Irregular verbs', dueDate: '2026-03-02' }),
  );
  expect(assigned.homework.classId).toBe(SEED.classes.english101);
  expect(assigned.students.map((s) => s.id)).toEqual([SEED.users.bob, SEED.users.carol, SEED.users.dan]);
  expect(assigned.notify).toEqual({
    template: 'homework_assigned',
    recipients: ['bob@school.example', 'carol@school.example', 'dan@school.example'],
    variables: { homework_title: 'Irregular verbs', due_date: '2026-03-02', class_name: 'English 101', teacher_name: 'Tom Teacher' },
  });
  // The teacher server itself sent nothing.
  expect(readStore(dataFile).outbox).toEqual([]);

  const key = 'turn-hw/step-2/call-bulk';
  const args = { recipients: [...assigned.notify.recipients, 'BOB@school.example'], template: assigned.notify.template, variables: assigned.notify.variables };
  const sent = await callTool(comms.client, 'send_bulk', args, { key });
  expect(bodyOf<{ sent: unknown[] }>(sent).sent).toHaveLength(3);
  const outbox = readStore(dataFile).outbox;
  expect(outbox.map((m) => m.to)).toEqual(['bob@school.example', 'carol@school.example', 'dan@school.example']);
  for (const message of outbox) {
    expect(message).toMatchObject({ tenantId: 'demo', template: 'homework_assigned', idempotencyKey: key, subject: 'New homework: Irregular verbs' });
    expect(message.body).toContain('Tom Teacher has assigned "Irregular verbs" for English 101, due 2026-03-02');
    expect(message.id).toEqual(expect.any(String));
    expect(Number.isNaN(Date.parse(message.sentAt))).toBe(false);
  }

  // The retry with the same key: the same answer, no mail.
  expect(await callTool(comms.client, 'send_bulk', args, { key })).toEqual(sent);
  expect(readStore(dataFile).outbox).toHaveLength(3);

  // The student now sees the homework and hands it in.
  const homework = await readJsonResource<Array<{ id: string; submitted: boolean }>>(student.client, 'student://homework');
  expect(homework.find((h) => h.id === assigned.homework.id)).toMatchObject({ submitted: false });
  const submitKey = 'turn-sub/step-1/call-1';
  const submitted = await callTool(student.client, 'submit_homework', { homeworkId: assigned.homework.id, content: 'go – went – gone' }, { key: submitKey });
  expect(bodyOf<{ submission: { attempt: number } }>(submitted).submission.attempt).toBe(1);
  expect(await callTool(student.client, 'submit_homework', { homeworkId: assigned.homework.id, content: 'go – went – gone' }, { key: submitKey })).toEqual(submitted);
  expect(readStore(dataFile).submissions.filter((s) => s.homeworkId === assigned.homework.id)).toHaveLength(1);
  const after = await readJsonResource<Array<{ id: string; submitted: boolean }>>(student.client, 'student://homework');
  expect(after.find((h) => h.id === assigned.homework.id)).toMatchObject({ submitted: true });
});

test('send_email and templates: variables are checked and rendered', async () => {
  const key = 'turn-mail/step-1/call-1';
  const first = await callTool(comms.client, 'send_email', { to: 'tom@school.example', subject: 'Hello', body: 'Hi Tom' }, { key });
  expect(await callTool(comms.client, 'send_email', { to: 'tom@school.example', subject: 'Hello', body: 'Hi Tom' }, { key })).toEqual(first);
  expect(readStore(dataFile).outbox.filter((m) => m.to === 'tom@school.example')).toHaveLength(1);

  const missing = await callTool(comms.client, 'send_bulk', { recipients: ['bob@school.example'], template: 'payment_receipt', variables: { amount: 250 } });
  expect(missing.isError).toBe(true);
  expect(textOf(missing)).toMatch(/needs the variable\(s\): invoice_id/);

  bodyOf(
    await callTool(comms.client, 'send_bulk', {
      recipients: ['bob@school.example'],
      template: 'payment_receipt',
      variables: { invoice_id: 'INV-1001', amount: '250.00', transaction_id: 'TX-1' },
    }),
  );
  const receipt = readStore(dataFile).outbox.at(-1);
  expect(receipt).toMatchObject({ to: 'bob@school.example', subject: 'Payment receipt for invoice INV-1001', template: 'payment_receipt' });
  expect(receipt?.body).toContain('250.00 EUR for invoice INV-1001 (transaction TX-1)');

  const outbox = await readJsonResource<unknown[]>(comms.client, 'comms://outbox');
  expect(outbox).toHaveLength(readStore(dataFile).outbox.length);
  expect(await readJsonResource<unknown[]>(comms.client, 'comms://outbox', { tenant: 'other' })).toEqual([]);

  // Invalid input is rejected by the schema before any effect.
  const bad = await callTool(comms.client, 'send_email', { to: 'not-an-email', subject: 'x', body: 'y' });
  expect(bad.isError).toBe(true);
});

test('teacher: attendance, classes, timetable, refusals', async () => {
  const key = 'turn-att/step-1/call-1';
  const args = { classId: SEED.classes.english101, date: '2026-03-03', present: [SEED.users.bob, SEED.users.dan] };
  const marked = await callTool(teacher.client, 'mark_attendance', args, { key });
  expect(bodyOf<{ attendance: { absent: string[] } }>(marked).attendance.absent).toEqual([SEED.users.carol]);
  // Marking again (new key, same list) replaces the record: still one record for that date.
  bodyOf(await callTool(teacher.client, 'mark_attendance', { ...args, present: [SEED.users.bob] }));
  const records = readStore(dataFile).attendance.filter((a) => a.classId === SEED.classes.english101 && a.date === '2026-03-03');
  expect(records).toHaveLength(1);
  expect(records[0]).toMatchObject({ present: [SEED.users.bob], absent: [SEED.users.carol, SEED.users.dan] });

  const refusals: Array<[string, Record<string, unknown>, RegExp]> = [
    ['mark_attendance', { classId: SEED.classes.english101, date: '2026-03-03', present: ['u-nobody'] }, /Not enrolled in English 101: u-nobody/],
    ['mark_attendance', { classId: 'c-nope', date: '2026-03-03', present: [] }, /No such class/],
    ['assign_homework', { className: 'Underwater Basket Weaving', title: 'x', dueDate: '2026-03-03' }, /No such class/],
    ['assign_homework', { className: 'English 101', title: 'x', dueDate: '03/03/2026' }, /YYYY-MM-DD/],
    ['assign_homework', { title: 'x', dueDate: '2026-03-03' }, /classId or a className/],
  ];
  for (const [tool, toolArgs, message] of refusals) {
    const result = await callTool(teacher.client, tool, toolArgs);
    expect({ tool, isError: result.isError, text: textOf(result) }).toEqual({ tool, isError: true, text: expect.stringMatching(message) });
  }

  const classes = await readJsonResource<Array<{ name: string; students: unknown[] }>>(teacher.client, 'teacher://my_classes');
  expect(classes.map((c) => [c.name, c.students.length])).toEqual([
    ['English 101', 3],
    ['Math 201', 2],
  ]);
  const timetable = await readJsonResource<Array<{ day: string; className: string }>>(teacher.client, 'teacher://my_timetable');
  expect(timetable.map((s) => `${s.day} ${s.className}`)).toEqual(['Mon English 101', 'Tue Math 201', 'Wed English 101', 'Thu Math 201']);

  const listed = bodyOf<{ classes: Array<{ name: string; students: Array<{ name: string }> }> }>(await callTool(teacher.client, 'list_students', { className: 'Math 201' }));
  expect(listed.classes[0]?.students.map((s) => s.name)).toEqual(['Bob Brown', 'Carol Chen']);

  // Another teacher (from the user context) does not teach English 101.
  const other = await callTool(teacher.client, 'assign_homework', { className: 'English 101', title: 'x', dueDate: '2026-03-03' }, { user: { id: SEED.users.bob, role: 'student', tenant: 'demo' } });
  expect(textOf(other)).toMatch(/not a teacher/);
});

test('student: grades, profile, schedule, progress, tutor', async () => {
  const grades = bodyOf<{ student: { id: string }; grades: Array<{ percent: number }>; averagePercent: number }>(await callTool(student.client, 'view_grades', {}));
  expect(grades.student.id).toBe(SEED.users.bob);
  expect(grades.grades.map((g) => g.percent)).toEqual([78, 64]);
  expect(grades.averagePercent).toBe(71);

  // The user context picks the student; a student may not read someone else's grades.
  const carol = { id: SEED.users.carol, role: 'student', tenant: 'demo' };
  expect(bodyOf<{ student: { id: string } }>(await callTool(student.client, 'view_grades', {}, { user: carol })).student.id).toBe(SEED.users.carol);
  const peek = await callTool(student.client, 'view_grades', { studentId: SEED.users.bob }, { user: carol });
  expect(peek.isError).toBe(true);
  expect(textOf(peek)).toMatch(/own grades/);

  const profile = await readJsonResource<{ name: string; classes: Array<{ name: string }> }>(student.client, 'student://profile', carol);
  expect(profile).toMatchObject({ name: 'Carol Chen', classes: [{ name: 'English 101' }, { name: 'Math 201' }] });
  const schedule = await readJsonResource<Array<{ day: string }>>(student.client, 'student://schedule', { id: SEED.users.dan, tenant: 'demo' });
  expect(schedule.map((s) => s.day)).toEqual(['Mon', 'Wed']);
  const progress = await readJsonResource<{ classes: Array<{ className: string; homework: { assigned: number; submitted: number } }> }>(
    student.client,
    'student://progress',
    carol,
  );
  expect(progress.classes.find((c) => c.className === 'English 101')?.homework.submitted).toBeGreaterThanOrEqual(1);

  const tutor = bodyOf<{ demo: boolean; answer: string; topic: string }>(await callTool(student.client, 'ask_tutor', { question: 'When do I use the present perfect?' }));
  expect(tutor).toMatchObject({ demo: true, topic: 'present perfect' });
  expect(tutor.answer).toMatch(/^\[Demo tutor: canned answer, no AI model was consulted\]/);

  // Not enrolled → refused; unknown homework → refused.
  const notMine = await callTool(student.client, 'submit_homework', { homeworkId: SEED.homework.fractions, content: '1/2' }, { user: { id: SEED.users.dan, tenant: 'demo' } });
  expect(textOf(notMine)).toMatch(/not enrolled in Math 201/);
  expect(textOf(await callTool(student.client, 'submit_homework', { homeworkId: 'hw-nope', content: 'x' }))).toMatch(/Unknown homework/);
  // In tenant other, demo's default student does not exist.
  await expect(readJsonResource(student.client, 'student://profile', { tenant: 'other' })).rejects.toThrow(/No student "u-bob"/);
});
