import type { readStore } from '../examples/servers/school/store';
import { studentName, type TurnRecord } from './users';

/**
 * Side effects counted in the school store against the turns that asked for them: per soak student,
 * the charges (transactions), refunds and receipt mails. A turn charges at most once and mails one
 * receipt per charge; a refund refunds one charge. Anything above is a duplicated effect; a turn that
 * said "Done." without its charge in the store is a lost one. A message the run's deadline cut before
 * any answer said whether it started a turn (`unanswered`) may have charged: it counts as a turn that
 * may charge once, never more.
 */
export interface EffectFigures {
  charges: number;
  refunds: number;
  receipts: number;
  extraCharges: number;
  extraRefunds: number;
  extraReceipts: number;
  missingCharges: number;
  details: string[];
}

export function effectFigures(store: ReturnType<typeof readStore>, users: number, turns: TurnRecord[]): EffectFigures {
  const f: EffectFigures = { charges: 0, refunds: 0, receipts: 0, extraCharges: 0, extraRefunds: 0, extraReceipts: 0, missingCharges: 0, details: [] };
  for (let u = 0; u < users; u++) {
    const name = studentName(u);
    const student = store.users.find((x) => x.name === name);
    if (!student) continue;
    const mine = turns.filter((t) => t.user === u && (t.turnId || t.unanswered));
    const payTurns = mine.filter((t) => t.kind === 'pay');
    const payDone = payTurns.filter((t) => t.outcome === 'completed' && t.text?.startsWith('Done.')).length;
    const refundTurns = mine.filter((t) => t.kind === 'refund').length;
    const txs = store.transactions.filter((t) => t.userId === student.id);
    const refunded = txs.filter((t) => t.status === 'refunded').length;
    const receipts = store.outbox.filter((m) => m.to === student.email && m.template === 'payment_receipt').length;
    f.charges += txs.length;
    f.refunds += refunded;
    f.receipts += receipts;
    const extra = (n: number, of: number, what: string): number => {
      if (n <= of) return 0;
      f.details.push(`${name}: ${n} ${what} for ${of} turns`);
      return n - of;
    };
    f.extraCharges += extra(txs.length, payTurns.length, 'charges');
    f.extraRefunds += extra(refunded, refundTurns, 'refunds');
    f.extraReceipts += extra(receipts, txs.length, 'receipts');
    if (payDone > txs.length) {
      f.missingCharges += payDone - txs.length;
      f.details.push(`${name}: ${payDone} payments said done, ${txs.length} charges in the store`);
    }
  }
  return f;
}
