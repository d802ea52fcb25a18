/**
 * The demo data a new school store starts with (store.ts seeds a file that does not exist yet).
 */
import type { SchoolData } from './records';

/** Ids of the seeded records, for tests and for the servers' defaults. */
export const SEED = {
  tenant: 'demo',
  otherTenant: 'other',
  users: { ada: 'u-ada', tom: 'u-tom', bob: 'u-bob', carol: 'u-carol', dan: 'u-dan' },
  otherUsers: { olivia: 'u-olivia', bobStone: 'u-bob-stone' },
  classes: { english101: 'c-english-101', math201: 'c-math-201' },
  otherClasses: { french101: 'c-french-101' },
  homework: { essay: 'hw-english-essay', fractions: 'hw-math-fractions' },
  invoices: { bobUnpaid: 'INV-1001', carolPaid: 'INV-1002', otherUnpaid: 'INV-0901' },
  transactions: { carol: 'TX-SEED0001' },
} as const;

/** A fresh copy of the demo data a new store starts with. */
export function createSeedData(now = new Date().toISOString()): SchoolData {
  const t = SEED.tenant;
  const o = SEED.otherTenant;
  const u = SEED.users;
  const c = SEED.classes;
  return {
    version: 1,
    users: [
      { id: u.ada, tenantId: t, name: 'Ada Admin', role: 'admin', email: 'ada@school.example', createdAt: now },
      { id: u.tom, tenantId: t, name: 'Tom Teacher', role: 'teacher', email: 'tom@school.example', createdAt: now },
      { id: u.bob, tenantId: t, name: 'Bob Brown', role: 'student', email: 'bob@school.example', createdAt: now },
      { id: u.carol, tenantId: t, name: 'Carol Chen', role: 'student', email: 'carol@school.example', createdAt: now },
      { id: u.dan, tenantId: t, name: 'Dan Diaz', role: 'student', email: 'dan@school.example', createdAt: now },
      { id: SEED.otherUsers.olivia, tenantId: o, name: 'Olivia Owens', role: 'teacher', email: 'olivia@other.example', createdAt: now },
      // Another "Bob", in the other tenant: a search for "Bob" must find only the caller's Bob.
      { id: SEED.otherUsers.bobStone, tenantId: o, name: 'Bob Stone', role: 'student', email: 'bob@other.example', createdAt: now },
    ],
    classes: [
      { id: c.english101, tenantId: t, name: 'English 101', teacherId: u.tom, room: 'Room 12', createdAt: now },
      { id: c.math201, tenantId: t, name: 'Math 201', teacherId: u.tom, room: 'Room 4', createdAt: now },
      { id: SEED.otherClasses.french101, tenantId: o, name: 'French 101', teacherId: SEED.otherUsers.olivia, room: 'B1', createdAt: now },
    ],
    enrolments: [
      { id: 'e-eng-bob', tenantId: t, classId: c.english101, studentId: u.bob, enrolledAt: now },
      { id: 'e-eng-carol', tenantId: t, classId: c.english101, studentId: u.carol, enrolledAt: now },
      { id: 'e-eng-dan', tenantId: t, classId: c.english101, studentId: u.dan, enrolledAt: now },
      { id: 'e-math-bob', tenantId: t, classId: c.math201, studentId: u.bob, enrolledAt: now },
      { id: 'e-math-carol', tenantId: t, classId: c.math201, studentId: u.carol, enrolledAt: now },
      { id: 'e-fr-bob-stone', tenantId: o, classId: SEED.otherClasses.french101, studentId: SEED.otherUsers.bobStone, enrolledAt: now },
    ],
    grades: [
      { id: 'g-1', tenantId: t, studentId: u.bob, classId: c.english101, assessment: 'Grammar quiz 1', score: 78, maxScore: 100, gradedAt: now },
      { id: 'g-2', tenantId: t, studentId: u.bob, classId: c.math201, assessment: 'Algebra test', score: 64, maxScore: 100, gradedAt: now },
      { id: 'g-3', tenantId: t, studentId: u.carol, classId: c.english101, assessment: 'Grammar quiz 1', score: 92, maxScore: 100, gradedAt: now },
      { id: 'g-4', tenantId: t, studentId: u.carol, classId: c.math201, assessment: 'Algebra test', score: 88, maxScore: 100, gradedAt: now },
      { id: 'g-5', tenantId: t, studentId: u.dan, classId: c.english101, assessment: 'Grammar quiz 1', score: 71, maxScore: 100, gradedAt: now },
      { id: 'g-6', tenantId: o, studentId: SEED.otherUsers.bobStone, classId: SEED.otherClasses.french101, assessment: 'Dictée', score: 55, maxScore: 100, gradedAt: now },
    ],
    timetable: [
      { id: 'tt-1', tenantId: t, classId: c.english101, day: 'Mon', start: '09:00', end: '10:30', room: 'Room 12' },
      { id: 'tt-2', tenantId: t, classId: c.english101, day: 'Wed', start: '09:00', end: '10:30', room: 'Room 12' },
      { id: 'tt-3', tenantId: t, classId: c.math201, day: 'Tue', start: '11:00', end: '12:30', room: 'Room 4' },
      { id: 'tt-4', tenantId: t, classId: c.math201, day: 'Thu', start: '11:00', end: '12:30', room: 'Room 4' },
      { id: 'tt-5', tenantId: o, classId: SEED.otherClasses.french101, day: 'Fri', start: '14:00', end: '15:30', room: 'B1' },
    ],
    homework: [
      {
        id: SEED.homework.essay,
        tenantId: t,
        classId: c.english101,
        title: 'Present Perfect Exercise',
        description: 'Write ten sentences about things you have done this year.',
        dueDate: '2026-02-12',
        assignedBy: u.tom,
        createdAt: now,
      },
      {
        id: SEED.homework.fractions,
        tenantId: t,
        classId: c.math201,
        title: 'Fractions worksheet',
        dueDate: '2026-02-15',
        assignedBy: u.tom,
        createdAt: now,
      },
    ],
    submissions: [
      {
        id: 'sub-seed-1',
        tenantId: t,
        homeworkId: SEED.homework.essay,
        studentId: u.carol,
        content: 'I have visited London. I have learned to swim. …',
        attempt: 1,
        submittedAt: now,
      },
    ],
    attendance: [
      {
        id: 'att-seed-1',
        tenantId: t,
        classId: c.english101,
        date: '2026-01-12',
        present: [u.bob, u.carol],
        absent: [u.dan],
        markedBy: u.tom,
        markedAt: now,
      },
    ],
    invoices: [
      {
        id: SEED.invoices.bobUnpaid,
        tenantId: t,
        userId: u.bob,
        amount: 250,
        currency: 'EUR',
        description: 'Term 1 tuition',
        status: 'unpaid',
        issuedAt: now,
      },
      {
        id: SEED.invoices.carolPaid,
        tenantId: t,
        userId: u.carol,
        amount: 250,
        currency: 'EUR',
        description: 'Term 1 tuition',
        status: 'paid',
        issuedAt: now,
        paidAt: now,
        transactionId: SEED.transactions.carol,
      },
      {
        id: SEED.invoices.otherUnpaid,
        tenantId: o,
        userId: SEED.otherUsers.bobStone,
        amount: 99,
        currency: 'EUR',
        description: 'Course materials',
        status: 'unpaid',
        issuedAt: now,
      },
    ],
    transactions: [
      {
        id: SEED.transactions.carol,
        tenantId: t,
        invoiceId: SEED.invoices.carolPaid,
        userId: u.carol,
        amount: 250,
        currency: 'EUR',
        method: 'bank_transfer',
        status: 'succeeded',
        createdAt: now,
      },
    ],
    outbox: [],
    idempotency: {},
  };
}

