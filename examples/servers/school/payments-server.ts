/**
 * School payments MCP server: charges invoices and refunds transactions. The payment processor is
 * simulated: a successful charge is a transaction record in the school store.
 *
 *   node dist/examples/servers/school/payments-server.js [--stdio] [--data FILE]
 *   node dist/examples/servers/school/payments-server.js --http [--port N] [--data FILE]   → PAYMENTS_SERVER_URL=…
 *   … [--protocol 2026-07-28]   MCP 2026-07-28 on the v2 server package (modern.ts) instead of 2025-11-25 on the v1 SDK
 *
 * The tools and resources are registered once (registerPayments) on either SDK's server.
 *
 * process_payment does not mark the invoice paid: the admin server's record_payment does (the
 * seeds' pattern 3: find_user → get_invoice → process_payment → record_payment). It refuses a second
 * charge while the invoice has a captured (not refunded) transaction, so a paid or pending invoice is
 * never charged twice, whatever the idempotency keys.
 *
 * Annotations: both tools move money, which cannot be taken back without a compensating action, so
 * destructiveHint is true (a host should ask before calling them). process_payment is not
 * idempotentHint: the same arguments after a refund would charge again (retries are still
 * exactly-once through the idempotency key). refund_payment is idempotentHint: refunding a refunded
 * transaction changes nothing. openWorldHint is false because the processor is simulated; an
 * adapter to a real processor would set it true.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { legacyRegistrar, runServer } from './common';
import { cents, DomainError, effectTool, jsonResourceOf, money, ofTenant, ok, type Registrar, type Runtime } from './core';
import { modernServe } from './modern';
import { newId, type SchoolData, type Transaction } from './store';

function summary(data: SchoolData, tenantId: string): Record<string, unknown> {
  const byCurrency = new Map<string, { collected: number; refunded: number; outstanding: number }>();
  const bucket = (currency: string): { collected: number; refunded: number; outstanding: number } => {
    let entry = byCurrency.get(currency);
    if (!entry) byCurrency.set(currency, (entry = { collected: 0, refunded: 0, outstanding: 0 }));
    return entry;
  };
  const transactions = ofTenant(data.transactions, tenantId);
  const byMethod: Record<string, number> = {};
  for (const tx of transactions) {
    const entry = bucket(tx.currency);
    if (tx.status === 'succeeded') {
      entry.collected += cents(tx.amount);
      byMethod[tx.method] = (byMethod[tx.method] ?? 0) + 1;
    } else entry.refunded += cents(tx.amount);
  }
  const unpaid = ofTenant(data.invoices, tenantId).filter((i) => i.status === 'unpaid');
  for (const invoice of unpaid) bucket(invoice.currency).outstanding += cents(invoice.amount);
  return {
    tenantId,
    transactions: transactions.length,
    succeeded: transactions.filter((t) => t.status === 'succeeded').length,
    refunded: transactions.filter((t) => t.status === 'refunded').length,
    unpaidInvoices: unpaid.length,
    byMethod,
    // Amounts in currency units (not cents).
    totals: Object.fromEntries(
      [...byCurrency].map(([currency, t]) => [currency, { collected: t.collected / 100, refunded: t.refunded / 100, outstanding: t.outstanding / 100 }]),
    ),
  };
}

const INFO = { name: 'school-payments', version: '0.1.0' };

/** The payments tools and resources, on whichever SDK's server `tools` registers them. */
export function registerPayments(rt: Runtime, tools: Registrar): void {
  effectTool(
    rt,
    tools,
    'process_payment',
    {
      title: 'Process payment',
      description:
        'Charges an unpaid invoice (amount must equal the invoice amount) and returns the transaction. ' +
        'Then record it on the invoice with the admin record_payment tool. Refuses paid invoices and invoices with a captured payment.',
      inputSchema: {
        invoiceId: z.string().min(1).max(100).describe('Invoice id, e.g. "INV-1001"'),
        amount: z.number().positive().max(1_000_000).describe('Amount to charge; must equal the invoice amount'),
        method: z.enum(['card', 'bank_transfer']).optional().describe('Payment method; default card'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    (draft, { invoiceId, amount, method }, caller, now) => {
      const invoice = draft.invoices.find((i) => i.tenantId === caller.tenantId && i.id === invoiceId);
      if (!invoice) throw new DomainError(`Unknown invoice "${invoiceId}"`);
      if (invoice.status === 'paid') {
        throw new DomainError(`Invoice ${invoice.id} is already paid${invoice.transactionId ? ` (transaction ${invoice.transactionId})` : ''}; nothing was charged`);
      }
      if (cents(amount) !== cents(invoice.amount)) {
        throw new DomainError(`Amount mismatch: invoice ${invoice.id} is for ${money(invoice.amount, invoice.currency)}, not ${amount.toFixed(2)}; nothing was charged`);
      }
      const captured = draft.transactions.find((t) => t.tenantId === caller.tenantId && t.invoiceId === invoice.id && t.status === 'succeeded');
      if (captured) {
        throw new DomainError(
          `Invoice ${invoice.id} already has a captured payment ${captured.id}; record it with record_payment instead of charging again`,
        );
      }
      const tx: Transaction = {
        id: newId('TX-', draft.transactions, true),
        tenantId: caller.tenantId,
        invoiceId: invoice.id,
        userId: invoice.userId,
        amount: invoice.amount,
        currency: invoice.currency,
        method: method ?? 'card',
        status: 'succeeded',
        createdAt: now,
      };
      draft.transactions.push(tx);
      return ok({
        message: `Charged ${money(tx.amount, tx.currency)} for invoice ${invoice.id} by ${tx.method}: transaction ${tx.id}. Next: record_payment { invoiceId: "${invoice.id}", transactionId: "${tx.id}", amount: ${tx.amount} }.`,
        transaction: tx,
      });
    },
  );

  effectTool(
    rt,
    tools,
    'refund_payment',
    {
      title: 'Refund payment',
      description:
        'Refunds a transaction in full. The invoice it paid becomes unpaid again. Refunding a refunded transaction changes nothing.',
      inputSchema: {
        transactionId: z.string().min(1).max(100).describe('Transaction id, e.g. "TX-…"'),
        reason: z.string().trim().min(1).max(500).describe('Why the money goes back'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    (draft, { transactionId, reason }, caller, now) => {
      const tx = draft.transactions.find((t) => t.tenantId === caller.tenantId && t.id === transactionId);
      if (!tx) throw new DomainError(`Unknown transaction "${transactionId}"`);
      if (tx.status === 'succeeded') {
        tx.status = 'refunded';
        tx.refundedAt = now;
        tx.refundReason = reason;
        const invoice = draft.invoices.find((i) => i.tenantId === caller.tenantId && i.id === tx.invoiceId);
        if (invoice && invoice.transactionId === tx.id) {
          invoice.status = 'unpaid';
          delete invoice.paidAt;
          delete invoice.transactionId;
        }
      }
      return ok({ message: `Transaction ${tx.id} is refunded (${money(tx.amount, tx.currency)}): ${tx.refundReason ?? reason}`, transaction: tx });
    },
  );

  jsonResourceOf(
    rt,
    tools,
    'transactions',
    'payments://transactions',
    { title: 'Transactions', description: 'Every payment transaction of the current school, newest last.' },
    (data, caller) => ofTenant(data.transactions, caller.tenantId),
  );

  jsonResourceOf(
    rt,
    tools,
    'revenue_summary',
    'payments://revenue_summary',
    { title: 'Revenue summary', description: 'Collected, refunded and outstanding amounts per currency; transaction counts.' },
    (data, caller) => summary(data, caller.tenantId),
  );
}

export function createPaymentsServer(rt: Runtime): McpServer {
  const server = new McpServer(INFO);
  registerPayments(rt, legacyRegistrar(server));
  return server;
}

if (require.main === module) {
  runServer({ name: 'payments', urlVariable: 'PAYMENTS_SERVER_URL', create: createPaymentsServer, serveModern: modernServe({ info: INFO, register: registerPayments }) });
}
