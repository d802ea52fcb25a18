/**
 * Usage that loses nothing, on real processes (docs/decisions/0029-usage-exact.md): turns whose model
 * stream breaks after reporting tokens, whose worker is SIGKILLed while the model holds their request,
 * or between a tool's result and the next model call. Every model call attempt is in the ledger,
 * failed ones too, and the usage report's totals equal the sum of the turns' own usage.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import type { UsageReport } from '../../src/api/contract';
import type { ManagedProcess } from '../../src/cli/processes';
import type { UsageRecord } from '../../src/usage/ledger';
import { getJson, postMessage, readSse, waitFor } from '../helpers/http';
import { startSystem, type TestSystem } from '../helpers/system';

jest.setTimeout(240_000);

let sys: TestSystem;
let worker: ManagedProcess;
beforeAll(async () => {
  sys = await startSystem({
    // Anthropic's stream reports the prompt's tokens first: a stream cut after it has spent them.
    provider: 'anthropic',
    host: {
      // A killed worker's model call is retried elsewhere after 3 s without a heartbeat, not 30.
      timeouts: { llmStartToCloseMs: 120_000, llmHeartbeatMs: 3_000, toolStartToCloseMs: 600_000, toolHeartbeatMs: 10_000 },
      llmRetry: { maximumAttempts: 5, initialIntervalMs: 100, maximumIntervalMs: 500 },
    },
  });
  worker = sys.worker;
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

type Usage = { promptTokens: number; completionTokens: number; samplingTokens: number };

async function finished(turnId: string): Promise<Usage> {
  const events = await readSse(`${sys.apiUrl}/v1/turns/${turnId}/events`, { timeoutMs: 180_000 });
  expect(events.at(-1)?.event).toBe('done');
  const turn = await getJson(`${sys.apiUrl}/v1/turns/${turnId}`);
  expect(turn.body.status).toBe('completed');
  return turn.body.usage as Usage;
}

async function killWorkerAndStartAnother(): Promise<void> {
  await worker.kill();
  worker = await sys.startWorker();
}

/** The ledger's records of a turn's model call attempts (the worker's USAGE_LOG). */
function attemptsOf(turnId: string): UsageRecord[] {
  const lines = readFileSync(path.join(sys.dir, 'usage.jsonl'), 'utf8').split('\n').filter((l) => l.trim() !== '');
  const first = new Map<string, UsageRecord>();
  // The first line of a key counts, as the ledger's reader counts it.
  for (const r of lines.map((l) => JSON.parse(l) as UsageRecord)) if (!first.has(r.turnId)) first.set(r.turnId, r);
  return [...first.values()].filter((r) => r.kind === 'llm' && r.turn === turnId);
}

test("failed, retried and killed attempts: the report's totals are the sum over the turns", async () => {
  const turns: string[] = [];
  const submit = async (text: string): Promise<string> => {
    // A session each: no summary of older messages mixes in.
    const post = await postMessage(sys.apiUrl, `usage-exact-${turns.length}`, text);
    expect(post.status).toBe(202);
    turns.push(post.body.turnId as string);
    return post.body.turnId as string;
  };

  // 1. Nothing fails: two model calls around a tool call.
  await finished(await submit('remember that a plain turn costs its two steps'));

  // 2. The first stream is cut after message_start (its prompt tokens), ping and a block's start: that
  // attempt is charged, and the retry's result carries both, so the turn's usage has them too.
  sys.model.setFaults([{ hangup: true, afterChunks: 3, times: 1 }]);
  const cut = await submit('remember that a cut stream still costs');
  await finished(cut);
  // Step 1's activity twice (the failed attempt with its prompt's tokens), step 2's once.
  const byCall = new Map<string, number[]>();
  for (const r of attemptsOf(cut)) {
    expect(r.promptTokens).toBeGreaterThan(0);
    const parts = r.turnId.split('/');
    const attempt = Number(parts.pop());
    byCall.set(parts.join('/'), [...(byCall.get(parts.join('/')) ?? []), attempt]);
  }
  expect([...byCall.values()].map((a) => a.sort()).sort()).toEqual([[1], [1, 2]]);

  // 3. SIGKILL while the model holds the first request: another worker retries the call.
  sys.model.setFaults([{ delayMs: 20_000, times: 1 }]);
  const before = sys.model.requests().length;
  const held = await submit('remember that a killed worker loses no tokens');
  await waitFor(async () => (sys.model.requests().length > before ? true : undefined), 60_000, 25);
  await killWorkerAndStartAnother();
  await finished(held);

  // 4. SIGKILL between the tool's result and the next model call.
  const between = await submit('remember that a turn may move between workers');
  await readSse(`${sys.apiUrl}/v1/turns/${between}/events`, { stopAfter: (e) => e.event === 'tool_call_finished', timeoutMs: 60_000 });
  await killWorkerAndStartAnother();
  await finished(between);

  // Each turn's own usage (its view), summed, is what the report says.
  const usages = await Promise.all(turns.map(async (t) => (await getJson(`${sys.apiUrl}/v1/turns/${t}`)).body.usage as Usage));
  const sum = usages.reduce((s, u) => ({
    promptTokens: s.promptTokens + u.promptTokens,
    completionTokens: s.completionTokens + u.completionTokens,
    samplingTokens: s.samplingTokens + u.samplingTokens,
  }));
  for (const u of usages) expect(u.promptTokens).toBeGreaterThan(0);
  type Report = z.output<typeof UsageReport>;
  // Model calls are in the ledger before their activity ends; the turns' end records (sampling) are
  // written when each turn ends: wait for all of them.
  const report = await waitFor(async () => {
    const r = await getJson(`${sys.apiUrl}/v1/admin/usage?groupBy=tenant`);
    return r.status === 200 && (r.body as Report).totals.turns === turns.length ? (r.body as Report) : undefined;
  }, 60_000, 200);
  expect(report.totals).toMatchObject({ turns: turns.length, ...sum, totalTokens: sum.promptTokens + sum.completionTokens + sum.samplingTokens });
  // And the ledger's attempts of each turn are its usage.
  for (const [i, t] of turns.entries()) {
    const attempts = attemptsOf(t);
    expect(attempts.reduce((n, r) => n + r.promptTokens, 0)).toBe(usages[i]?.promptTokens);
    expect(attempts.reduce((n, r) => n + r.completionTokens, 0)).toBe(usages[i]?.completionTokens);
  }
});
