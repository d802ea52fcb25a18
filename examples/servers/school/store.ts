/**
 * The school platform's one persistent store, shared by the five example servers (admin, payments,
 * comms, student, teacher), each running in its own process.
 *
 * - One JSON file (`--data FILE`, else env SCHOOL_DATA_FILE, else `.data/school.json` under the
 *   working directory). A file that does not exist is created and seeded with demo data; an existing
 *   one is kept, so state survives restarts.
 * - Every read-modify-write runs inside `transact()`: an in-process queue plus a cross-process lock
 *   (proper-lockfile: a `FILE.lock` directory, taken with mkdir, refreshed while held, considered
 *   stale 10 s after its holder stopped refreshing it, e.g. because it was SIGKILLed).
 * - Writes are atomic: temp file in the same directory, fsync, rename. A crash mid-write leaves the
 *   previous file, never a truncated one. Readers never need the lock.
 * - Every record carries `tenantId`; the servers only ever filter on the caller's tenant.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import * as path from 'node:path';
import * as lockfile from 'proper-lockfile';

// ------------------------------------------------------------------ record shapes

export type Role = 'student' | 'teacher' | 'admin';

export interface User {
  id: string;
  tenantId: string;
  name: string;
  role: Role;
  email?: string;
  createdAt: string;
}

export interface SchoolClass {
  id: string;
  tenantId: string;
  name: string;
  teacherId: string;
  room?: string;
  createdAt: string;
}

export interface Enrolment {
  id: string;
  tenantId: string;
  classId: string;
  studentId: string;
  enrolledAt: string;
}

export interface Grade {
  id: string;
  tenantId: string;
  studentId: string;
  classId: string;
  assessment: string;
  score: number;
  maxScore: number;
  gradedAt: string;
}

export type Weekday = 'Mon' | 'Tue' | 'Wed' | 'Thu' | 'Fri';

export interface TimetableSlot {
  id: string;
  tenantId: string;
  classId: string;
  day: Weekday;
  /** "HH:MM", local school time */
  start: string;
  end: string;
  room: string;
}

export interface Homework {
  id: string;
  tenantId: string;
  classId: string;
  title: string;
  description?: string;
  /** "YYYY-MM-DD" */
  dueDate: string;
  assignedBy: string;
  createdAt: string;
}

export interface Submission {
  id: string;
  tenantId: string;
  homeworkId: string;
  studentId: string;
  content: string;
  /** 1 for the first submission of this homework by this student, 2 for a resubmission, … */
  attempt: number;
  submittedAt: string;
}

export interface AttendanceRecord {
  id: string;
  tenantId: string;
  classId: string;
  /** "YYYY-MM-DD"; one record per class and date (marking again replaces it) */
  date: string;
  present: string[];
  absent: string[];
  markedBy: string;
  markedAt: string;
}

export type InvoiceStatus = 'unpaid' | 'paid';

export interface Invoice {
  id: string;
  tenantId: string;
  userId: string;
  /** In currency units with two decimals, e.g. 250 or 99.5 */
  amount: number;
  currency: string;
  description: string;
  status: InvoiceStatus;
  issuedAt: string;
  /** Set while paid: when record_payment marked it, and by which transaction. */
  paidAt?: string;
  transactionId?: string;
}

export type PaymentMethod = 'card' | 'bank_transfer';

export interface Transaction {
  id: string;
  tenantId: string;
  invoiceId: string;
  userId: string;
  amount: number;
  currency: string;
  method: PaymentMethod;
  status: 'succeeded' | 'refunded';
  createdAt: string;
  refundedAt?: string;
  refundReason?: string;
}

export interface OutboxEntry {
  id: string;
  tenantId: string;
  to: string;
  subject: string;
  body: string;
  template?: string;
  /** The host's idempotency key of the call that sent it (null when the call had none). */
  idempotencyKey: string | null;
  /** Set for send_bulk: all messages of one send_bulk call share it. */
  batchId?: string;
  sentAt: string;
}

/** The first result of a side-effecting call, replayed for every repeat of its idempotency key. */
export interface IdempotencyRecord {
  server: string;
  tool: string;
  tenantId: string;
  /** The raw key as the host sent it. */
  key: string;
  result: StoredToolResult;
  recordedAt: string;
}

/** A CallToolResult as stored: plain JSON. */
export interface StoredToolResult {
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface SchoolData {
  version: 1;
  users: User[];
  classes: SchoolClass[];
  enrolments: Enrolment[];
  grades: Grade[];
  timetable: TimetableSlot[];
  homework: Homework[];
  submissions: Submission[];
  attendance: AttendanceRecord[];
  invoices: Invoice[];
  transactions: Transaction[];
  outbox: OutboxEntry[];
  /** `${server}/${tool}/${tenantId}/${key}` → the first result for that key. */
  idempotency: Record<string, IdempotencyRecord>;
}

const COLLECTIONS = [
  'users',
  'classes',
  'enrolments',
  'grades',
  'timetable',
  'homework',
  'submissions',
  'attendance',
  'invoices',
  'transactions',
  'outbox',
] as const;

// ------------------------------------------------------------------ seed data

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

// ------------------------------------------------------------------ file access

/** `--data` wins, then SCHOOL_DATA_FILE, then `.data/school.json`; relative paths are against cwd. */
export function resolveDataFile(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(flag || env.SCHOOL_DATA_FILE || '.data/school.json');
}

/** Fills collections an older or hand-edited file lacks, so code can rely on the full shape. */
function normalize(raw: unknown, file: string): SchoolData {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new Error(`${file} does not hold a school store (expected a JSON object)`);
  }
  const data = raw as Partial<SchoolData> & Record<string, unknown>;
  for (const key of COLLECTIONS) {
    if (data[key] === undefined) (data as Record<string, unknown>)[key] = [];
    else if (!Array.isArray(data[key])) throw new Error(`${file}: "${key}" must be an array`);
  }
  if (data.idempotency === undefined || data.idempotency === null) data.idempotency = {};
  data.version = 1;
  return data as SchoolData;
}

function parse(text: string, file: string): SchoolData {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    // Never "repair" by overwriting: a broken file is someone's data.
    throw new Error(`${file} is not valid JSON (${(error as Error).message}); fix or remove it`);
  }
  return normalize(raw, file);
}

/**
 * Reads the store as it is on disk right now (no lock needed: writers replace the file atomically).
 * Throws when the file does not exist; tests use this to inspect what the servers did.
 */
export function readStore(file: string): SchoolData {
  return parse(readFileSync(file, 'utf8'), file);
}

export interface StoreLogger {
  (message: string): void;
}

/** How long a lock may go without a refresh before others take it over (proper-lockfile `stale`). */
const LOCK_STALE_MS = 10_000;

/** Retry schedule for a held lock: short waits, long enough overall to outlast a stale lock. */
const LOCK_RETRIES = { retries: 400, factor: 1.3, minTimeout: 5, maxTimeout: 60, randomize: true };

/** One queue per file per process, so two store objects on one file in one process also serialize. */
const queues = new Map<string, Promise<unknown>>();

export interface TransactionOutcome<T> {
  value: T;
  /** The data to write; leave out to write nothing (a pure read, or a replayed idempotent call). */
  next?: SchoolData;
}

export class SchoolStore {
  readonly file: string;

  constructor(
    file: string,
    private readonly log: StoreLogger = () => undefined,
  ) {
    this.file = path.resolve(file);
  }

  /** Creates and seeds the file when it does not exist yet. Safe to call from many processes at once. */
  async ensure(): Promise<void> {
    if (existsSync(this.file)) return;
    await this.transact(() => ({ value: undefined }));
  }

  /** The current data, read without the lock. */
  async read(): Promise<SchoolData> {
    try {
      return parse(await readFile(this.file, 'utf8'), this.file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    await this.ensure();
    return parse(await readFile(this.file, 'utf8'), this.file);
  }

  /**
   * Runs `fn` on the freshest data with the file locked against every other writer, in this process
   * and in others, then writes `next` (if given) atomically before releasing the lock. `fn` must be
   * synchronous: nothing else can happen between its read and its write. If `fn` throws, nothing is
   * written.
   */
  transact<T>(fn: (data: SchoolData) => TransactionOutcome<T>): Promise<T> {
    const previous = queues.get(this.file) ?? Promise.resolve();
    const run = previous.then(
      () => this.locked(fn),
      () => this.locked(fn),
    );
    const settled = run.catch(() => undefined);
    queues.set(this.file, settled);
    void settled.then(() => {
      if (queues.get(this.file) === settled) queues.delete(this.file);
    });
    return run;
  }

  private async locked<T>(fn: (data: SchoolData) => TransactionOutcome<T>): Promise<T> {
    await mkdir(path.dirname(this.file), { recursive: true });
    let compromised: Error | undefined;
    const release = await lockfile.lock(this.file, {
      realpath: false, // the data file may not exist yet: we lock its name
      stale: LOCK_STALE_MS,
      retries: LOCK_RETRIES,
      onCompromised: (error) => {
        // The default throws from a timer (and kills the process); refuse to write instead.
        compromised = error;
        this.log(`store lock compromised: ${error.message}`);
      },
    });
    try {
      let data: SchoolData;
      let seeded = false;
      try {
        data = parse(await readFile(this.file, 'utf8'), this.file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
        data = createSeedData();
        seeded = true;
      }
      const outcome = fn(data);
      const toWrite = outcome.next ?? (seeded ? data : undefined);
      if (toWrite) {
        if (compromised) throw new Error(`store lock lost before writing (${compromised.message}); nothing was written`);
        await this.writeAtomically(toWrite);
        if (seeded) this.log(`seeded a new store at ${this.file}`);
      }
      return outcome.value;
    } finally {
      await release().catch((error: Error) => this.log(`store unlock failed: ${error.message}`));
    }
  }

  /** Temp file in the same directory, flushed to disk, then renamed over the old file. */
  private async writeAtomically(data: SchoolData): Promise<void> {
    const tmp = `${this.file}.${process.pid}.${randomUUID()}.tmp`;
    try {
      const handle = await open(tmp, 'w');
      try {
        await handle.writeFile(`${JSON.stringify(data, null, 2)}\n`, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, this.file);
    } catch (error) {
      await unlink(tmp).catch(() => undefined);
      throw error;
    }
  }
}

// ------------------------------------------------------------------ ids

/** A short random id with a prefix, unique among `taken`. */
export function newId(prefix: string, taken: ReadonlyArray<{ id: string }>, upper = false): string {
  for (;;) {
    const raw = randomBytes(5).toString('hex');
    const id = `${prefix}${upper ? raw.toUpperCase() : raw}`;
    if (!taken.some((r) => r.id === id)) return id;
  }
}

/** The next sequential invoice id (INV-1003, …), unique across tenants. */
export function nextInvoiceId(invoices: ReadonlyArray<{ id: string }>): string {
  let max = 1000;
  for (const invoice of invoices) {
    const match = /^INV-(\d+)$/.exec(invoice.id);
    if (match?.[1]) max = Math.max(max, Number(match[1]));
  }
  return `INV-${max + 1}`;
}
