/**
 * School admin MCP server: users, classes, enrolments and invoices of the caller's tenant.
 *
 *   node dist/examples/servers/school/admin-server.js [--stdio] [--data FILE]
 *   node dist/examples/servers/school/admin-server.js --http [--port N] [--data FILE]   → ADMIN_SERVER_URL=…
 *
 * Annotations: readOnlyHint for pure lookups; destructiveHint false for tools that only add records
 * or fill in empty fields (record_payment refuses to overwrite a different payment);
 * idempotentHint true where repeating the same arguments changes nothing more (enrol_student,
 * record_payment). openWorldHint is false everywhere: everything stays in the school store.
 * Exactly-once under retries does not rely on the hints: every side effect dedupes on the host's
 * idempotency key (see effectTool in core.ts).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { legacyRegistrar, runServer } from './common';
import { cents, DomainError, effectTool, jsonResourceOf, money, ofTenant, ok, readTool, type Runtime } from './core';
import { newId, nextInvoiceId, type Invoice, type Role, type SchoolData, type StoredToolResult, type User } from './store';

const ROLES = ['student', 'teacher', 'admin'] as const;

export function publicUser(user: User): { id: string; name: string; role: Role; email: string | null } {
  return { id: user.id, name: user.name, role: user.role, email: user.email ?? null };
}

// ------------------------------------------------------------------ fuzzy name search

function normalize(text: string): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim();
}

/** Edit distance where a swap of two neighbouring letters also counts as one edit ("brwon" → "brown"). */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  const at = (i: number, j: number): number => rows[i]?.[j] ?? 0;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      const row = rows[i];
      if (row) row[j] = best;
    }
  }
  return at(a.length, b.length);
}

/** 0 = no match; higher = better. Case- and accent-insensitive; tolerates a typo or two per word. */
export function matchScore(query: string, user: User): number {
  const q = normalize(query);
  if (q === '') return 1;
  const name = normalize(user.name);
  const email = normalize(user.email ?? '');
  if (name === q || email === q || user.id.toLowerCase() === q) return 100;
  if (name.startsWith(q)) return 80;
  const nameWords = name.split(' ');
  const queryWords = q.split(' ');
  if (queryWords.every((w) => nameWords.some((n) => n.startsWith(w)))) return 70;
  if (name.includes(q) || (email !== '' && email.includes(q))) return 60;
  const close = (w: string, n: string): boolean => w.length >= 3 && editDistance(w, n) <= (w.length >= 7 ? 2 : 1);
  if (queryWords.every((w) => nameWords.some((n) => close(w, n) || close(w, n.slice(0, w.length))))) return 40;
  return 0;
}

// ------------------------------------------------------------------ lookups

function userIn(data: SchoolData, tenantId: string, userId: string): User {
  const user = data.users.find((u) => u.tenantId === tenantId && u.id === userId);
  if (!user) throw new DomainError(`Unknown user "${userId}" (use find_user to look a user up by name)`);
  return user;
}

function invoiceIn(data: SchoolData, tenantId: string, invoiceId: string): Invoice {
  const invoice = data.invoices.find((i) => i.tenantId === tenantId && i.id === invoiceId);
  if (!invoice) throw new DomainError(`Unknown invoice "${invoiceId}"`);
  return invoice;
}

function invoiceView(data: SchoolData, invoice: Invoice): Record<string, unknown> {
  const user = data.users.find((u) => u.id === invoice.userId && u.tenantId === invoice.tenantId);
  return { ...invoice, userName: user?.name ?? null };
}

// ------------------------------------------------------------------ server

export function createAdminServer(rt: Runtime): McpServer {
  const server = new McpServer({ name: 'school-admin', version: '0.1.0' });
  const tools = legacyRegistrar(server);

  effectTool(
    rt,
    tools,
    'add_user',
    {
      title: 'Add user',
      description: 'Creates a user (student, teacher or admin) in the current school. Refuses a second user with the same email.',
      inputSchema: {
        name: z.string().trim().min(1).max(100).describe("The user's full name"),
        role: z.enum(ROLES).describe("The user's role"),
        email: z.email().max(254).optional().describe("The user's email address"),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (draft, { name, role, email }, caller, now) => {
      if (email && draft.users.some((u) => u.tenantId === caller.tenantId && u.email?.toLowerCase() === email.toLowerCase())) {
        throw new DomainError(`A user with email ${email} already exists`);
      }
      const user: User = { id: newId('u-', draft.users), tenantId: caller.tenantId, name, role, ...(email ? { email } : {}), createdAt: now };
      draft.users.push(user);
      return ok({ message: `Added ${role} ${name} with id ${user.id}`, user: publicUser(user) });
    },
  );

  readTool(
    rt,
    tools,
    'find_user',
    {
      title: 'Find user',
      description:
        'Finds users by name (case-insensitive, partial and slightly misspelled names match), email or id. ' +
        'Returns { users: [{ id, name, role, email }] }, best match first. An empty query lists everyone.',
      inputSchema: {
        query: z.string().max(200).optional().describe('Name, part of a name, email or id, e.g. "bob"'),
        name: z.string().max(200).optional().describe('Same as query (either may be given)'),
        role: z.enum(ROLES).optional().describe('Only users with this role'),
      },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ query, name, role }, { caller, data }) => {
      const q = query ?? name ?? '';
      const users = ofTenant(data.users, caller.tenantId)
        .filter((u) => role === undefined || u.role === role)
        .map((u) => ({ u, score: matchScore(q, u) }))
        .filter((m) => m.score > 0)
        .sort((a, b) => b.score - a.score || a.u.name.localeCompare(b.u.name))
        .slice(0, 50)
        .map((m) => publicUser(m.u));
      return ok({ users });
    },
  );

  effectTool(
    rt,
    tools,
    'create_class',
    {
      title: 'Create class',
      description: 'Creates a class taught by the given teacher. Class names are unique within the school.',
      inputSchema: {
        name: z.string().trim().min(1).max(100).describe('Class name, e.g. "English 102"'),
        teacherId: z.string().min(1).max(100).describe('Id of a user with role teacher'),
        room: z.string().trim().min(1).max(50).optional().describe('Room, e.g. "Room 12"'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (draft, { name, teacherId, room }, caller, now) => {
      const teacher = userIn(draft, caller.tenantId, teacherId);
      if (teacher.role !== 'teacher') throw new DomainError(`${teacher.name} (${teacher.id}) is a ${teacher.role}, not a teacher`);
      if (ofTenant(draft.classes, caller.tenantId).some((c) => c.name.toLowerCase() === name.toLowerCase())) {
        throw new DomainError(`A class named "${name}" already exists`);
      }
      const created = { id: newId('c-', draft.classes), tenantId: caller.tenantId, name, teacherId, ...(room ? { room } : {}), createdAt: now };
      draft.classes.push(created);
      return ok({ message: `Created class ${name} (${created.id}) taught by ${teacher.name}`, class: created });
    },
  );

  effectTool(
    rt,
    tools,
    'enrol_student',
    {
      title: 'Enrol student',
      description: 'Enrols a student in a class. Enrolling someone already enrolled changes nothing.',
      inputSchema: {
        classId: z.string().min(1).max(100).describe('Class id'),
        studentId: z.string().min(1).max(100).describe('Id of a user with role student'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (draft, { classId, studentId }, caller, now) => {
      const cls = draft.classes.find((c) => c.tenantId === caller.tenantId && c.id === classId);
      if (!cls) throw new DomainError(`No such class "${classId}"`);
      const student = userIn(draft, caller.tenantId, studentId);
      if (student.role !== 'student') throw new DomainError(`${student.name} (${student.id}) is a ${student.role}, not a student`);
      let enrolment = draft.enrolments.find((e) => e.tenantId === caller.tenantId && e.classId === classId && e.studentId === studentId);
      if (!enrolment) {
        enrolment = { id: newId('e-', draft.enrolments), tenantId: caller.tenantId, classId, studentId, enrolledAt: now };
        draft.enrolments.push(enrolment);
      }
      return ok({ message: `${student.name} is enrolled in ${cls.name}`, enrolment });
    },
  );

  readTool(
    rt,
    tools,
    'get_invoice',
    {
      title: 'Get invoices',
      description:
        "Looks up one invoice by invoiceId, or a user's invoices by userId (optionally only unpaid or paid ones). " +
        'Returns { invoices: [{ id, userId, userName, amount, currency, description, status, … }] }, unpaid first.',
      inputSchema: {
        invoiceId: z.string().min(1).max(100).optional().describe('Invoice id, e.g. "INV-1001"'),
        userId: z.string().min(1).max(100).optional().describe('Id of the user whose invoices to list'),
        status: z.enum(['unpaid', 'paid']).optional().describe('Only invoices with this status'),
      },
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    ({ invoiceId, userId, status }, { caller, data }) => {
      let invoices: Invoice[];
      if (invoiceId !== undefined) {
        invoices = [invoiceIn(data, caller.tenantId, invoiceId)];
        if (userId !== undefined && invoices[0]?.userId !== userId) throw new DomainError(`Invoice ${invoiceId} does not belong to user ${userId}`);
      } else if (userId !== undefined) {
        userIn(data, caller.tenantId, userId);
        invoices = ofTenant(data.invoices, caller.tenantId).filter((i) => i.userId === userId);
      } else {
        throw new DomainError('Give an invoiceId or a userId');
      }
      const rank = (i: Invoice): number => (i.status === 'unpaid' ? 0 : 1);
      const selected = invoices.filter((i) => status === undefined || i.status === status).sort((a, b) => rank(a) - rank(b) || a.id.localeCompare(b.id));
      return ok({ invoices: selected.map((i) => invoiceView(data, i)) });
    },
  );

  effectTool(
    rt,
    tools,
    'issue_invoice',
    {
      title: 'Issue invoice',
      description: 'Issues a new unpaid invoice to a user.',
      inputSchema: {
        userId: z.string().min(1).max(100).describe('Id of the user to invoice'),
        amount: z.number().positive().max(1_000_000).describe('Amount, e.g. 250 or 99.50'),
        description: z.string().trim().min(1).max(200).describe('What the invoice is for'),
        currency: z.string().regex(/^[A-Z]{3}$/).optional().describe('ISO 4217 code; default EUR'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (draft, { userId, amount, description, currency }, caller, now) => {
      const user = userIn(draft, caller.tenantId, userId);
      const invoice: Invoice = {
        id: nextInvoiceId(draft.invoices),
        tenantId: caller.tenantId,
        userId: user.id,
        amount: cents(amount) / 100,
        currency: currency ?? 'EUR',
        description,
        status: 'unpaid',
        issuedAt: now,
      };
      draft.invoices.push(invoice);
      return ok({ message: `Issued ${invoice.id} to ${user.name}: ${money(invoice.amount, invoice.currency)}, ${description}`, invoice: invoiceView(draft, invoice) });
    },
  );

  effectTool(
    rt,
    tools,
    'record_payment',
    {
      title: 'Record payment',
      description:
        'Marks an invoice paid by a payments transaction (from process_payment). Recording the same transaction ' +
        'again changes nothing; an invoice already paid by a different transaction is refused.',
      inputSchema: {
        invoiceId: z.string().min(1).max(100).describe('Invoice id, e.g. "INV-1001"'),
        transactionId: z.string().min(1).max(100).describe('The transaction id process_payment returned, e.g. "TX-…"'),
        amount: z.number().positive().max(1_000_000).describe('The amount paid; must equal the invoice amount'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (draft, { invoiceId, transactionId, amount }, caller, now) => {
      const invoice = invoiceIn(draft, caller.tenantId, invoiceId);
      const paid = (): StoredToolResult =>
        ok({ message: `Invoice ${invoice.id} is paid (transaction ${transactionId}, ${money(invoice.amount, invoice.currency)})`, invoice: invoiceView(draft, invoice) });
      if (invoice.status === 'paid') {
        if (invoice.transactionId === transactionId) return paid();
        throw new DomainError(`Invoice ${invoice.id} is already paid by transaction ${invoice.transactionId ?? '(unknown)'}; not recording ${transactionId}`);
      }
      const tx = draft.transactions.find((t) => t.tenantId === caller.tenantId && t.id === transactionId);
      if (!tx) throw new DomainError(`Unknown transaction "${transactionId}" (charge the invoice with process_payment first)`);
      if (tx.invoiceId !== invoice.id) throw new DomainError(`Transaction ${tx.id} paid invoice ${tx.invoiceId}, not ${invoice.id}`);
      if (tx.status !== 'succeeded') throw new DomainError(`Transaction ${tx.id} was refunded; it cannot pay an invoice`);
      if (cents(amount) !== cents(invoice.amount) || cents(tx.amount) !== cents(invoice.amount)) {
        throw new DomainError(`Amount mismatch: invoice ${invoice.id} is for ${money(invoice.amount, invoice.currency)}, got ${amount.toFixed(2)}`);
      }
      invoice.status = 'paid';
      invoice.paidAt = now;
      invoice.transactionId = tx.id;
      return paid();
    },
  );

  jsonResourceOf(rt, tools, 'users', 'admin://users', { title: 'Users', description: "Every user of the current school: id, name, role, email." }, (data, caller) =>
    ofTenant(data.users, caller.tenantId).map(publicUser),
  );

  jsonResourceOf(
    rt,
    tools,
    'classes',
    'admin://classes',
    { title: 'Classes', description: 'Every class with its teacher and enrolled students.' },
    (data, caller) =>
      ofTenant(data.classes, caller.tenantId).map((c) => ({
        id: c.id,
        name: c.name,
        room: c.room ?? null,
        teacher: publicUserOrNull(data, caller.tenantId, c.teacherId),
        students: ofTenant(data.enrolments, caller.tenantId)
          .filter((e) => e.classId === c.id)
          .map((e) => publicUserOrNull(data, caller.tenantId, e.studentId))
          .filter((u) => u !== null),
      })),
  );

  jsonResourceOf(rt, tools, 'invoices', 'admin://invoices', { title: 'Invoices', description: 'Every invoice of the current school, with status.' }, (data, caller) =>
    ofTenant(data.invoices, caller.tenantId).map((i) => invoiceView(data, i)),
  );

  jsonResourceOf(
    rt,
    tools,
    'system_status',
    'admin://system_status',
    { title: 'System status', description: 'Counts: students, teachers, admins, classes, enrolments, unpaid invoices and the amount outstanding.' },
    (data, caller) => systemStatus(data, caller.tenantId),
  );

  server.registerPrompt(
    'admin_persona',
    { title: 'Admin assistant persona', description: 'System prompt for the school administration assistant.' },
    () => ({
      description: 'School administration assistant',
      messages: [
        {
          role: 'user',
          content: {
            type: 'text',
            text: [
              'You are an AI administrative assistant for a school platform.',
              '',
              'Your role:',
              '- Help administrators with users, classes, enrolments, invoices and payments.',
              '- Be clear and concise; use a professional tone; format reports as tables or lists.',
              '- Confirm before anything that moves money or cannot be undone.',
              '- To take a payment: find_user → get_invoice → payments process_payment → record_payment with the transaction id.',
              '',
              'Security:',
              '- You only see and change data of the current school (tenant).',
              '- Respect privacy: share personal data only with those who need it.',
            ].join('\n'),
          },
        },
      ],
    }),
  );

  return server;
}

function publicUserOrNull(data: SchoolData, tenantId: string, userId: string): ReturnType<typeof publicUser> | null {
  const user = data.users.find((u) => u.tenantId === tenantId && u.id === userId);
  return user ? publicUser(user) : null;
}

export function systemStatus(data: SchoolData, tenantId: string): Record<string, unknown> {
  const users = ofTenant(data.users, tenantId);
  const unpaid = ofTenant(data.invoices, tenantId).filter((i) => i.status === 'unpaid');
  const outstanding: Record<string, number> = {};
  for (const invoice of unpaid) outstanding[invoice.currency] = (cents(outstanding[invoice.currency] ?? 0) + cents(invoice.amount)) / 100;
  return {
    tenantId,
    students: users.filter((u) => u.role === 'student').length,
    teachers: users.filter((u) => u.role === 'teacher').length,
    admins: users.filter((u) => u.role === 'admin').length,
    classes: ofTenant(data.classes, tenantId).length,
    enrolments: ofTenant(data.enrolments, tenantId).length,
    unpaidInvoices: unpaid.length,
    paidInvoices: ofTenant(data.invoices, tenantId).filter((i) => i.status === 'paid').length,
    outstanding,
    homework: ofTenant(data.homework, tenantId).length,
  };
}

if (require.main === module) runServer({ name: 'admin', urlVariable: 'ADMIN_SERVER_URL', create: createAdminServer });
