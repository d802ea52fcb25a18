/**
 * A session's summary of its older messages costs tokens outside any turn: the summarizing activity
 * (real openai client, the demo model over HTTP) records them in the usage ledger against the
 * session's owner, once per attempt, and counts them in the worker's token metric as kind `summary`;
 * a ledger that cannot record costs the record, never the summary.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities } from '../../src/activities';
import { type DemoModelHandle, startDemoModel } from '../../src/demo-model/server';
import { createLlmClient } from '../../src/llm/client';
import type { McpServerHub } from '../../src/mcp/pool';
import { createWorkerMetrics } from '../../src/metrics';
import { fileUsageLedger, type UsageRecord } from '../../src/usage/ledger';
import { createSummaryUsageRecorder, type SessionOwner } from '../../src/usage/summary-usage';

let model: DemoModelHandle;
const dir = mkdtempSync(path.join(tmpdir(), 'dmh-summary-usage-'));
beforeAll(async () => {
  model = await startDemoModel({
    rules: { scripts: [{ name: 'summarize', match: '^Summarize the conversation below', steps: [{ text: 'SUMMARY: ada likes tea' }] }] },
  });
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});

const INFO = { workflowExecution: { workflowId: 'session-0a1b2c3d-s1', runId: 'run-1' }, activityId: '7', attempt: 2 };
const INPUT = {
  sessionId: 's1',
  messages: [
    { role: 'user' as const, content: 'I like tea' },
    { role: 'assistant' as const, content: 'Noted: tea.' },
  ],
  maxChars: 500,
};

function setup(ownerOf: (workflowId: string) => Promise<SessionOwner | undefined>) {
  const records: UsageRecord[] = [];
  const ledger = fileUsageLedger(path.join(dir, `${Math.random().toString(36).slice(2)}.jsonl`));
  const metrics = createWorkerMetrics({ circuits: () => [] });
  const errors: string[] = [];
  const activities = createActivities({
    hub: {} as unknown as McpServerHub,
    llm: createLlmClient({ baseUrl: model.url, model: 'demo-model', apiKey: 'k', timeoutMs: 5_000 }),
    validator: { validate: () => ({ ok: true }) },
    logger: pino({ level: 'error' }, { write: (line: string) => void errors.push(line) }),
    secrets: [],
    metrics: metrics.observer,
    summaryUsage: createSummaryUsageRecorder({
      ledger: {
        record: async (r) => {
          records.push(r);
          await ledger.record(r);
        },
      },
      ownerOf,
      model: 'demo-model',
    }),
  });
  const tokensMetric = async (kind: string) =>
    (await metrics.registry.metrics()).split('\n').find((l) => l.startsWith(`dmh_llm_tokens_total{kind="${kind}"} `))?.split(' ').at(-1);
  return { activities, records, ledger, errors, tokensMetric };
}

test("a summary's tokens are recorded against the session's owner and counted as kind summary", async () => {
  const asked: string[] = [];
  const { activities, records, ledger, tokensMetric } = setup(async (workflowId) => {
    asked.push(workflowId);
    return { id: 'u-ada', tenant: 'demo' };
  });
  const result = (await new MockActivityEnvironment(INFO).run(activities.summarizeConversation, INPUT)) as { summary: string };
  expect(result.summary).toBe('SUMMARY: ada likes tea');

  expect(asked).toEqual(['session-0a1b2c3d-s1']);
  expect(records).toHaveLength(1);
  const [r] = records as [UsageRecord];
  expect(r).toMatchObject({
    turnId: 'summary/session-0a1b2c3d-s1/run-1/7/2',
    kind: 'summary',
    sessionId: 's1',
    tenant: 'demo',
    userId: 'u-ada',
    model: 'demo-model',
    samplingTokens: 0,
  });
  expect(r.promptTokens).toBeGreaterThan(0);
  expect(r.completionTokens).toBeGreaterThan(0);
  // The metric has the same tokens, apart from the turns' prompt and completion kinds.
  expect(await tokensMetric('summary')).toBe(String(r.promptTokens + r.completionTokens));
  expect(await tokensMetric('prompt')).toBeUndefined();
  // The report counts it as a summary of the session, not as a turn.
  const day = { from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 60_000) };
  expect(await ledger.sum({ tenant: 'demo', ...day, groupBy: 'session' })).toEqual([
    { tenant: 'demo', userId: 'u-ada', sessionId: 's1', model: 'demo-model', turns: 0, summaries: 1, promptTokens: r.promptTokens, completionTokens: r.completionTokens, samplingTokens: 0 },
  ]);
});

test('an owner that cannot be read costs the record (logged), not the summary', async () => {
  const { activities, records, errors, tokensMetric } = setup(async () => {
    throw new Error('describe failed: UNAVAILABLE');
  });
  const result = (await new MockActivityEnvironment(INFO).run(activities.summarizeConversation, INPUT)) as { summary: string };
  expect(result.summary).toBe('SUMMARY: ada likes tea');
  expect(records).toEqual([]);
  expect(errors.join('')).toMatch(/recording the summary's token usage failed/);
  expect(errors.join('')).toMatch(/describe failed: UNAVAILABLE/);
  // The metric does not depend on the ledger.
  expect(Number(await tokensMetric('summary'))).toBeGreaterThan(0);
});
