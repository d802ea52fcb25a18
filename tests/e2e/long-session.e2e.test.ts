import type { DemoRules } from '../../src/demo-model/rules';
import { ownerKey } from '../../src/api/gateway';
import { sessionWorkflowId } from '../../src/shared/ids';
import { getJson, postMessage, waitFor } from '../helpers/http';
import { DEMO_USERS, startSystem, type TestSystem } from '../helpers/system';

/**
 * A 1000-turn conversation with the scripted model, through the HTTP API: it completes, in order,
 * and no workflow comes near Temporal's history limits (51,200 events / 50 MB per run; Temporal
 * starts warning at 10,240 events): a session is the chain of its turns (decision 0033), each of
 * which carries the memory, summarized past the threshold, and no workflow lives as long as the session.
 */
const TURNS = 1_000;
const RULES: DemoRules = {
  model: 'demo-model',
  fallback: 'no script',
  scripts: [
    { name: 'say', match: '^turn (\\d+): (.+)$', steps: [{ text: 'noted turn {{match.1}}' }] },
    { name: 'summarize', match: '^Summarize the conversation below \\((\\d+) messages\\)', steps: [{ text: 'SUMMARY of {{match.1}} messages' }] },
  ],
};

let sys: TestSystem;
beforeAll(async () => {
  // Default session settings, except a queue deep enough to keep the session busy between polls.
  sys = await startSystem({ rules: RULES, servers: () => ({}), host: { sessions: { maxQueuedTurns: 32 } } });
}, 120_000);
afterAll(async () => {
  await sys?.stop();
});

test(`a ${TURNS}-turn conversation completes and stays far from Temporal's history limits`, async () => {
  const sessionId = 'marathon';
  const started = Date.now();
  let sent = 0;
  while (sent < TURNS) {
    // Keep up to 24 messages in flight: the session runs them one after another, in order.
    const batch = Math.min(24, TURNS - sent);
    for (let i = 0; i < batch; i++) {
      sent += 1;
      const r = await postMessage(sys.apiUrl, sessionId, `turn ${sent}: ${'some words of conversation '.repeat(3)}`);
      expect(r.status).toBe(202);
    }
    await waitFor(async () => {
      const s = (await getJson(`${sys.apiUrl}/v1/sessions/${sessionId}/messages`)).body;
      return s.totalMessages === sent * 2 && !s.activeTurnId && s.queuedTurnIds.length === 0 ? s : undefined;
    }, 120_000, 50);
  }
  const elapsedS = (Date.now() - started) / 1000;
  process.stdout.write(`${TURNS} turns in ${elapsedS.toFixed(1)} s (${(TURNS / elapsedS).toFixed(1)} turns/s)\n`);

  const s = (await getJson(`${sys.apiUrl}/v1/sessions/${sessionId}/messages`)).body;
  expect(s.totalMessages).toBe(TURNS * 2);
  expect(s.summary).toMatch(/^SUMMARY of \d+ messages$/);
  // The transcript kept in the workflow is bounded: transcriptLimit (200), or the model's verbatim
  // memory when that is longer. Here an exchange is ~35 estimated tokens, so the 6,000-token
  // summarization threshold holds up to ~171 exchanges (~342 messages) before they are summarized.
  expect(s.messages.length).toBeLessThanOrEqual(360);
  expect(s.messages.every((m: { status: string }) => m.status === 'completed')).toBe(true);
  // The transcript is chronological (requests queued in a batch come before their answers); the
  // newest requests and answers are each in order.
  const contents = (role: string) => s.messages.filter((m: { role: string }) => m.role === role).map((m: { content: string }) => m.content);
  expect(contents('assistant').slice(-3)).toEqual([`noted turn ${TURNS - 2}`, `noted turn ${TURNS - 1}`, `noted turn ${TURNS}`]);
  expect(contents('user').slice(-2).map((c: string) => c.split(':')[0])).toEqual([`turn ${TURNS - 1}`, `turn ${TURNS}`]);

  // No workflow of the session's own.
  const workflowId = sessionWorkflowId(ownerKey({ id: DEMO_USERS.admin.sub, tenant: DEMO_USERS.admin.tenant }), sessionId);
  const sessionRuns = [];
  for await (const w of sys.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) sessionRuns.push(w);
  expect(sessionRuns).toHaveLength(0);

  // A turn late in the conversation: its history holds the pruned memory, not 2000 messages.
  const lastTurnId = s.messages.at(-1).turnId as string;
  const turnHistory = await sys.client.workflow.getHandle(lastTurnId).fetchHistory();
  expect(turnHistory.events?.length ?? 0).toBeLessThan(60);
  expect(JSON.stringify(turnHistory).length).toBeLessThan(200 * 1024);
}, 1_500_000);
