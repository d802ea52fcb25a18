/**
 * Every model call attempt's tokens, recorded by its activity (real SDK clients, the demo model over
 * HTTP, the real file ledger): a turn's LLM step and a session's summary are charged to the workflow's
 * owner once per attempt, whether the model answered or the stream broke after reporting some tokens;
 * recording an attempt again changes nothing; a retried step's result counts what its earlier attempts
 * spent, so the turn's usage is what the ledger has; a ledger that cannot record costs the record
 * (logged), never the answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import pino from 'pino';
import { createActivities } from '../../src/activities';
import { type DemoModelHandle, startDemoModel } from '../../src/demo-model/server';
import type { LlmClient } from '../../src/llm/client';
import type { McpServerHub } from '../../src/mcp/pool';
import { createWorkerMetrics } from '../../src/metrics';
import type { LlmRequest, LlmResponse } from '../../src/shared/turn';
import { createAttemptUsageRecorder, type WorkflowOwner } from '../../src/usage/attempt-usage';
import { fileUsageLedger, type UsageLedger, type UsageRecord } from '../../src/usage/ledger';
import { clientFor, providerCase } from '../helpers/providers';

let model: DemoModelHandle;
const dir = mkdtempSync(path.join(tmpdir(), 'dmh-attempt-usage-'));
beforeAll(async () => {
  model = await startDemoModel({
    rules: {
      scripts: [
        { name: 'summarize', match: '^Summarize the conversation below', steps: [{ text: 'SUMMARY: ada likes tea' }] },
        { name: 'answer', match: 'tell me', steps: [{ text: 'Here is a fairly long answer of several words.' }] },
      ],
    },
  });
});
afterAll(async () => {
  await model.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => model.setFaults([]));

const ADA: WorkflowOwner = { id: 'u-ada', tenant: 'demo', sessionId: 's1' };
const DAY = () => ({ from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 60_000) });
const SUMMARY_INFO = { workflowExecution: { workflowId: 'session-0a1b2c3d-s1', runId: 'run-1' }, activityId: '7', attempt: 2 };
const turnInfo = (attempt: number) => ({ workflowExecution: { workflowId: 'turn-1', runId: 'run-t' }, activityId: '3', attempt });
const SUMMARY_INPUT = {
  sessionId: 's1',
  messages: [
    { role: 'user' as const, content: 'I like tea' },
    { role: 'assistant' as const, content: 'Noted: tea.' },
  ],
  maxChars: 500,
};
const STEP: LlmRequest = { turnId: 'turn-1', step: 1, messages: [{ role: 'user', content: 'tell me something' }], tools: [] };

function setup(opts: { ownerOf?: (workflowId: string) => Promise<WorkflowOwner | undefined>; ledger?: UsageLedger; llm?: LlmClient } = {}) {
  const records: UsageRecord[] = [];
  const ledger = opts.ledger ?? fileUsageLedger(path.join(dir, `${Math.random().toString(36).slice(2)}.jsonl`));
  const metrics = createWorkerMetrics({ circuits: () => [] });
  const errors: string[] = [];
  const asked: string[] = [];
  const activities = createActivities({
    hub: {} as unknown as McpServerHub,
    llm: opts.llm ?? clientFor(providerCase('openai'), model, 'k'),
    validator: { validate: () => ({ ok: true }) },
    logger: pino({ level: 'error' }, { write: (line: string) => void errors.push(line) }),
    secrets: [],
    metrics: metrics.observer,
    usage: createAttemptUsageRecorder({
      ledger: {
        record: async (r) => {
          records.push(r);
          await ledger.record(r);
        },
        get: (keys) => ledger.get(keys),
      },
      ownerOf: async (workflowId) => {
        asked.push(workflowId);
        return await (opts.ownerOf ?? (async () => ADA))(workflowId);
      },
      backoffMs: 1,
    }),
  });
  const tokensMetric = async (kind: string) =>
    (await metrics.registry.metrics()).split('\n').find((l) => l.startsWith(`dmh_llm_tokens_total{kind="${kind}"} `))?.split(' ').at(-1);
  return { activities, records, ledger, errors, asked, tokensMetric };
}

test("a summary's tokens are recorded against the session's owner and counted as kind summary", async () => {
  const { activities, records, ledger, asked, tokensMetric } = setup();
  const result = (await new MockActivityEnvironment(SUMMARY_INFO).run(activities.summarizeConversation, SUMMARY_INPUT)) as { summary: string };
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
    provider: 'openai',
    model: 'demo-model',
    samplingTokens: 0,
  });
  expect(r.turn).toBeUndefined();
  expect(r.promptTokens).toBeGreaterThan(0);
  expect(r.completionTokens).toBeGreaterThan(0);
  // The metric has the same tokens, apart from the turns' prompt and completion kinds.
  expect(await tokensMetric('summary')).toBe(String(r.promptTokens + r.completionTokens));
  expect(await tokensMetric('prompt')).toBeUndefined();
  // The report counts it as a summary of the session, not as a turn.
  expect(await ledger.sum({ tenant: 'demo', ...DAY(), groupBy: 'session' })).toEqual([
    { tenant: 'demo', userId: 'u-ada', sessionId: 's1', provider: 'openai', model: 'demo-model', turns: 0, summaries: 1, promptTokens: r.promptTokens, completionTokens: r.completionTokens, samplingTokens: 0 },
  ]);
});

test('an owner that cannot be read costs the record (logged), not the summary', async () => {
  const { activities, records, errors, tokensMetric } = setup({
    ownerOf: async () => {
      throw new Error('describe failed: UNAVAILABLE');
    },
  });
  const result = (await new MockActivityEnvironment(SUMMARY_INFO).run(activities.summarizeConversation, SUMMARY_INPUT)) as { summary: string };
  expect(result.summary).toBe('SUMMARY: ada likes tea');
  expect(records).toEqual([]);
  expect(errors.join('')).toMatch(/recording the token usage of a model call failed/);
  expect(errors.join('')).toMatch(/describe failed: UNAVAILABLE/);
  // The metric does not depend on the ledger.
  expect(Number(await tokensMetric('summary'))).toBeGreaterThan(0);
});

test("a turn's answered step is recorded once per attempt, against the turn's owner and session", async () => {
  const { activities, records, ledger, asked } = setup();
  const res = (await new MockActivityEnvironment(turnInfo(1)).run(activities.callLlm, STEP)) as LlmResponse;
  expect(res.usage?.promptTokens).toBeGreaterThan(0);
  expect(records).toEqual([
    expect.objectContaining({
      turnId: 'llm/turn-1/run-t/3/1',
      kind: 'llm',
      turn: 'turn-1',
      sessionId: 's1',
      tenant: 'demo',
      userId: 'u-ada',
      provider: 'openai',
      model: 'demo-model',
      promptTokens: res.usage?.promptTokens,
      completionTokens: res.usage?.completionTokens,
      samplingTokens: 0,
    }),
  ]);
  // The same attempt recorded again (a worker that died after writing and before completing, its
  // attempt delivered again): the ledger keeps one; the owner was read once.
  await new MockActivityEnvironment(turnInfo(1)).run(activities.callLlm, STEP);
  expect(asked).toEqual(['turn-1']);
  expect(await ledger.sum({ tenant: 'demo', ...DAY(), groupBy: 'session' })).toEqual([
    { tenant: 'demo', userId: 'u-ada', sessionId: 's1', provider: 'openai', model: 'demo-model', turns: 1, summaries: 0, promptTokens: res.usage?.promptTokens, completionTokens: res.usage?.completionTokens, samplingTokens: 0 },
  ]);
});

test("a step whose request names its caller and session is charged to them without reading the turn's owner", async () => {
  // The search attributes would say someone else: what the request names (the turn's own input) wins.
  const { activities, records, asked } = setup({ ownerOf: async () => ({ id: 'u-other', tenant: 'elsewhere' }) });
  const step: LlmRequest = { ...STEP, caller: { id: 'u-bob', tenant: 'demo', sessionId: 's2' } };
  await new MockActivityEnvironment(turnInfo(1)).run(activities.callLlm, step);
  expect(asked).toEqual([]);
  expect(records).toEqual([expect.objectContaining({ turnId: 'llm/turn-1/run-t/3/1', kind: 'llm', turn: 'turn-1', sessionId: 's2', tenant: 'demo', userId: 'u-bob' })]);
  // A request recorded before requests named their session (its caller only) still reads the owner.
  await new MockActivityEnvironment(turnInfo(2)).run(activities.callLlm, { ...STEP, caller: { id: 'u-bob', tenant: 'demo' } });
  expect(asked).toEqual(['turn-1']);
  expect(records[1]).toMatchObject({ turnId: 'llm/turn-1/run-t/3/2', userId: 'u-other', tenant: 'elsewhere' });
});

test("a stream that broke after reporting tokens is charged; the retry's result counts them, so the turn's usage is the ledger's", async () => {
  const anthropic = clientFor(providerCase('anthropic'), model, 'k');
  const { activities, records, ledger } = setup({ llm: anthropic });
  // message_start (with the prompt's tokens), ping, the text block's start: then the socket is gone.
  model.setFaults([{ hangup: true, afterChunks: 3, times: 1 }]);
  const err = (await new MockActivityEnvironment(turnInfo(1)).run(activities.callLlm, STEP).catch((e: unknown) => e)) as ApplicationFailure;
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err.nonRetryable).toBe(false);
  expect(records).toHaveLength(1);
  const failed = records[0] as UsageRecord;
  expect(failed).toMatchObject({ turnId: 'llm/turn-1/run-t/3/1', kind: 'llm', turn: 'turn-1', provider: 'anthropic', model: 'demo-model' });
  expect(failed.promptTokens).toBeGreaterThan(0);

  // The second attempt answers: its own record, and a result with both attempts' tokens.
  const res = (await new MockActivityEnvironment(turnInfo(2)).run(activities.callLlm, STEP)) as LlmResponse;
  expect(records).toHaveLength(2);
  const answered = records[1] as UsageRecord;
  expect(answered.turnId).toBe('llm/turn-1/run-t/3/2');
  expect(answered.completionTokens).toBeGreaterThan(failed.completionTokens);
  expect(res.usage).toMatchObject({ promptTokens: failed.promptTokens + answered.promptTokens, completionTokens: failed.completionTokens + answered.completionTokens });
  const [row] = await ledger.sum({ tenant: 'demo', ...DAY(), groupBy: 'user' });
  expect(row).toMatchObject({ provider: 'anthropic', turns: 1, promptTokens: res.usage?.promptTokens, completionTokens: res.usage?.completionTokens });
});

test('a ledger that cannot record (after its tries) costs the record, logged, never the answer', async () => {
  let tries = 0;
  const broken: UsageLedger = {
    record: async () => {
      tries += 1;
      throw new Error('connection terminated');
    },
    get: async () => [],
    sum: async () => [],
  };
  const { activities, errors } = setup({ ledger: broken });
  const res = (await new MockActivityEnvironment(turnInfo(1)).run(activities.callLlm, STEP)) as LlmResponse;
  expect(res.text).toBe('Here is a fairly long answer of several words.');
  expect(tries).toBe(3);
  expect(errors.join('')).toMatch(/"err":"connection terminated".*"msg":"recording the token usage of a model call failed"/);
});

test("a workflow with no owner to charge (started without the API's search attributes) is not recorded", async () => {
  const { activities, records } = setup({ ownerOf: async () => undefined });
  const res = (await new MockActivityEnvironment(turnInfo(1)).run(activities.callLlm, STEP)) as LlmResponse;
  expect(res.usage?.promptTokens).toBeGreaterThan(0);
  expect(records).toEqual([]);
});
