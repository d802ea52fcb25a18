import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runSoak, type SoakResult } from '../../soak/run';

/**
 * The soak in two minutes (issue 26 §1; `npm run soak` runs the long one): the scale-out topology
 * (two API replicas behind the proxy, three workers, the full Temporal server on PostgreSQL, the bus)
 * under a few users of the school patterns, over SSE and WebSocket with reconnects, while workers and
 * replicas are SIGKILLed and the payments server, the bus's PostgreSQL and Temporal are restarted.
 * Nothing lost, duplicated or missed in a stream; memory, descriptors and MCP connections flat.
 * Waits on conditions only: the users go on until every fault is back, however slow the machine.
 */
jest.setTimeout(40 * 60_000);

let out: string;
let result: SoakResult;
const lines: string[] = [];

beforeAll(async () => {
  out = mkdtempSync(path.join(tmpdir(), 'dmh-soak-'));
  result = await runSoak({ users: 4, minutes: 2, out, command: 'jest tests/chaos/soak.test.ts', log: (line) => lines.push(line) });
}, 40 * 60_000);
afterAll(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

test('the short soak passes every rule: no turn lost, no duplicated effect, no stream fault, nothing grows', () => {
  if (!result.ok) throw new Error(`${result.failures.join('\n')}\n\n${result.report}\n${lines.join('\n')}`);
  expect(result.failures).toEqual([]);
});

test('it ran what it claims: every kind of fault, payments with approved refunds, both stream kinds with reconnects', () => {
  const f = result.figures;
  const faults = f.faults.map((x) => x.name.replace(/-\d$/, ''));
  for (const name of ['kill worker', 'kill api', 'kill payments', 'restart bus PostgreSQL', 'restart Temporal']) expect(faults).toContain(name);
  expect(f.turns.completed).toBeGreaterThan(0);
  expect(f.effects.charges).toBeGreaterThan(0);
  expect(f.approvals).toBeGreaterThan(0);
  expect(f.effects.refunds).toBeGreaterThan(0);
  expect(f.turns.reconnects).toBeGreaterThan(0);
  expect(f.histories.turns).toBeGreaterThan(0);
  // The report and the picture are written, the faults marked on it.
  expect(readFileSync(path.join(out, 'report.md'), 'utf8')).toContain('| lost | 0 |');
  const svg = readFileSync(path.join(out, 'soak.svg'), 'utf8');
  expect(svg).toMatch(/^<svg /);
  expect(svg).toContain('restart Temporal');
});
