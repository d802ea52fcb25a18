/**
 * School communications MCP server: a shared service (the seeds' pattern 5) other servers' work is
 * announced through, by the host. Delivery is simulated: a delivered message is an entry in the
 * store's `outbox`.
 *
 *   node dist/examples/servers/school/comms-server.js [--stdio] [--data FILE]
 *   node dist/examples/servers/school/comms-server.js --http [--port N] [--data FILE]   → COMMS_SERVER_URL=…
 *
 * Annotations: sending only appends messages (destructiveHint false); sending twice sends twice
 * (idempotentHint false; host retries are still exactly-once through the idempotency key: one
 * send_bulk key sends each recipient one message, ever). openWorldHint is false because the outbox
 * is simulated; a real mail adapter would set it true.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { legacyRegistrar, runServer } from './common';
import { DomainError, effectTool, jsonResourceOf, ofTenant, ok, type Runtime } from './core';
import { newId, type OutboxEntry } from './store';

type Variables = Record<string, string | number | boolean>;

interface Template {
  subject: string;
  body: string;
  required: string[];
  defaults: Record<string, string>;
}

/** `{{name}}` placeholders; every template's required variables must be given. */
export const TEMPLATES: Record<'homework_assigned' | 'payment_receipt' | 'announcement', Template> = {
  homework_assigned: {
    subject: 'New homework: {{homework_title}}',
    body: 'Hello,\n\n{{teacher_name}} has assigned "{{homework_title}}" for {{class_name}}, due {{due_date}}.\n\nGood luck!',
    required: ['homework_title', 'due_date'],
    defaults: { teacher_name: 'Your teacher', class_name: 'your class' },
  },
  payment_receipt: {
    subject: 'Payment receipt for invoice {{invoice_id}}',
    body: 'Hello,\n\nWe received your payment of {{amount}} {{currency}} for invoice {{invoice_id}}{{transaction_suffix}}.\n\nThank you.',
    required: ['invoice_id', 'amount'],
    defaults: { currency: 'EUR', transaction_suffix: '' },
  },
  announcement: {
    subject: '{{title}}',
    body: '{{message}}',
    required: ['message'],
    defaults: { title: 'Announcement' },
  },
};

export function renderTemplate(name: keyof typeof TEMPLATES, variables: Variables): { subject: string; body: string } {
  const template = TEMPLATES[name];
  const missing = template.required.filter((v) => variables[v] === undefined || String(variables[v]).trim() === '');
  if (missing.length > 0) throw new DomainError(`Template ${name} needs the variable(s): ${missing.join(', ')}`);
  const values: Record<string, string> = { ...template.defaults };
  for (const [key, value] of Object.entries(variables)) values[key] = String(value);
  if (name === 'payment_receipt' && variables.transaction_id !== undefined) values.transaction_suffix = ` (transaction ${String(variables.transaction_id)})`;
  const fill = (text: string): string => text.replace(/\{\{(\w+)\}\}/g, (_all, key: string) => values[key] ?? '');
  return { subject: fill(template.subject), body: fill(template.body) };
}

export function createCommsServer(rt: Runtime): McpServer {
  const server = new McpServer({ name: 'school-comms', version: '0.1.0' });
  const tools = legacyRegistrar(server);

  effectTool(
    rt,
    tools,
    'send_email',
    {
      title: 'Send email',
      description: 'Sends one email.',
      inputSchema: {
        to: z.email().max(254).describe('Recipient email address'),
        subject: z.string().trim().min(1).max(200).describe('Subject line'),
        body: z.string().min(1).max(20_000).describe('Plain-text body'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (draft, { to, subject, body }, caller, now) => {
      const entry: OutboxEntry = {
        id: newId('msg-', draft.outbox),
        tenantId: caller.tenantId,
        to,
        subject,
        body,
        idempotencyKey: caller.idempotencyKey ?? null,
        sentAt: now,
      };
      draft.outbox.push(entry);
      return ok({ message: `Sent email ${entry.id} to ${to}`, email: { id: entry.id, to, subject, sentAt: now } });
    },
  );

  effectTool(
    rt,
    tools,
    'send_bulk',
    {
      title: 'Send bulk email',
      description:
        'Sends one templated email to each recipient (duplicates are sent once). Templates and their variables: ' +
        'homework_assigned {homework_title, due_date, teacher_name?, class_name?}; ' +
        'payment_receipt {invoice_id, amount, currency?, transaction_id?}; announcement {message, title?}.',
      inputSchema: {
        recipients: z.array(z.email().max(254)).min(1).max(500).describe('Recipient email addresses'),
        template: z.enum(['homework_assigned', 'payment_receipt', 'announcement']).describe('Template to render'),
        variables: z
          .record(z.string(), z.union([z.string().max(5_000), z.number(), z.boolean()]))
          .optional()
          .describe('Template variables, e.g. { "homework_title": "Essay", "due_date": "2026-03-01" }'),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (draft, { recipients, template, variables }, caller, now) => {
      const { subject, body } = renderTemplate(template, variables ?? {});
      const seen = new Set<string>();
      const unique = recipients.filter((r) => {
        const key = r.toLowerCase();
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
      const batchId = newId('batch-', []);
      const sent: Array<{ id: string; to: string }> = [];
      for (const to of unique) {
        const entry: OutboxEntry = {
          id: newId('msg-', draft.outbox),
          tenantId: caller.tenantId,
          to,
          subject,
          body,
          template,
          idempotencyKey: caller.idempotencyKey ?? null,
          batchId,
          sentAt: now,
        };
        draft.outbox.push(entry);
        sent.push({ id: entry.id, to });
      }
      return ok({ message: `Sent ${sent.length} "${template}" email(s): ${subject}`, batchId, subject, sent });
    },
  );

  jsonResourceOf(
    rt,
    tools,
    'outbox',
    'comms://outbox',
    { title: 'Outbox', description: 'Every message delivered for the current school, oldest first.' },
    (data, caller) => ofTenant(data.outbox, caller.tenantId),
  );

  return server;
}

if (require.main === module) runServer({ name: 'comms', urlVariable: 'COMMS_SERVER_URL', create: createCommsServer });
