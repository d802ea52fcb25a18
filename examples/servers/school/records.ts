/** The record shapes of the school store (store.ts), one JSON file shared by the five example servers. */

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
