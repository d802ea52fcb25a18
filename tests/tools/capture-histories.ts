/**
 * Runs representative turns on real parts and writes their histories to tests/histories/, for the
 * replay suite. Run after a deliberate workflow change: `npm run build && TEMPORAL_CLI=... node
 * dist/tests/tools/capture-histories.js`. Existing files with the same names are replaced.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { DemoRules } from '../../src/demo-model/rules';
import { startProtectedServer } from '../../examples/servers/protected-server';
import { bearer, getJson, postJson, postMessage, readSse } from '../helpers/http';
import { startSchoolSystem } from '../helpers/school';
import { DEMO_USERS, EXAMPLE_RULES, ROOT, startSystem, type TestSystem } from '../helpers/system';
import { ownerKey } from '../../src/api/gateway';
import { sessionWorkflowId } from '../../src/shared/ids';
import { loadPolicyFile } from '../../src/config/policy';
import type { Policy } from '../../src/shared/policy';
import { parsePayloadKeys } from '../../src/config/payload-keys';

const OUT = path.join(ROOT, 'tests', 'histories');

async function save(sys: TestSystem, name: string, workflowId: string, dir = OUT): Promise<void> {
  const handle = sys.client.workflow.getHandle(workflowId);
  // A stream's `done` is pushed while the turn's last workflow task still runs: wait for its close.
  if (workflowId.startsWith('turn-')) await handle.result().catch(() => undefined);
  const history = await handle.fetchHistory();
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, `${JSON.stringify({ workflowId, history: JSON.parse(historyToJSON(history)) }, null, 1)}\n`);
  process.stdout.write(`wrote ${path.relative(ROOT, file)} (${history.events?.length ?? 0} events)\n`);
}

/** The five seed patterns, and pattern 3 across a worker SIGKILL during process_payment. */
async function captureSchool(): Promise<void> {
  const sys = await startSchoolSystem({ toolDelays: 'process_payment=1500' });
  try {
    const patterns: Array<[string, string]> = [
      ['turn-pattern1-simple-query', 'How many students do we have?'],
      ['turn-pattern2-single-tool', 'Add a teacher named Alice Johnson'],
      ['turn-pattern3-multi-server', "Process payment for student Bob's invoice"],
      ['turn-pattern4-fan-out', 'Give me a full system status report'],
      ['turn-pattern5-delegation', 'Assign homework Essay on Hamlet to English 101 due 2026-12-01'],
    ];
    const teacher = bearer(await sys.token('teacher'));
    for (const [name, text] of patterns) {
      const headers = name.includes('pattern5') ? teacher : {};
      const { body } = await postMessage(sys.apiUrl, 'replay', text, headers);
      await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000, headers });
      await save(sys, name, body.turnId);
    }
    // Bob's invoice is paid now: the crash run gets a fresh system (and store) of its own.
    await sys.stop();
    const crash = await startSchoolSystem({ toolDelays: 'process_payment=1500' });
    try {
      const { body } = await postMessage(crash.apiUrl, 'replay', "Process payment for student Bob's invoice");
      await readSse(`${crash.apiUrl}${body.eventsUrl as string}`, {
        stopAfter: (e) => e.event === 'tool_call_started' && e.data.name === 'payments__process_payment',
        timeoutMs: 60_000,
      });
      await new Promise((r) => setTimeout(r, 300));
      await crash.worker.kill();
      await crash.startWorker();
      await readSse(`${crash.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 120_000 });
      await save(crash, 'turn-pattern3-worker-crash', body.turnId);
    } finally {
      await crash.stop();
    }
  } finally {
    await sys.stop().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const example = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const rules: DemoRules = {
    ...example,
    scripts: [
      { name: 'ghost', match: '(?i)^call the ghost tool', steps: [{ toolCalls: [{ name: 'ghost__vanish', arguments: {} }] }, { text: 'ghost: {{result.0}}' }] },
      ...(example.scripts ?? []),
    ],
  };
  const sys = await startSystem({ rules });
  try {
    mkdirSync(OUT, { recursive: true });
    const scenarios: Array<{ name: string; text: string; before?: () => void }> = [
      { name: 'turn-two-servers', text: 'remember that replay keeps us honest' },
      { name: 'turn-text-only', text: 'hello' },
      { name: 'turn-unknown-tool', text: 'call the ghost tool' },
      { name: 'turn-llm-rejected', text: 'hello', before: () => sys.model.setFaults([{ status: 401, times: 1 }]) },
      { name: 'turn-llm-retried', text: 'add 2 and 3', before: () => sys.model.setFaults([{ status: 503, times: 1 }]) },
    ];
    for (const s of scenarios) {
      s.before?.();
      const { body } = await postMessage(sys.apiUrl, 'replay', s.text);
      await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
      const history = await sys.client.workflow.getHandle(body.turnId).fetchHistory();
      const file = path.join(OUT, `${s.name}.json`);
      writeFileSync(file, `${JSON.stringify({ workflowId: body.turnId, history: JSON.parse(historyToJSON(history)) }, null, 1)}\n`);
      process.stdout.write(`wrote ${path.relative(ROOT, file)} (${history.events?.length ?? 0} events)\n`);
    }
    const catalogRun = await sys.client.workflow.execute('catalogWorkflow', { workflowId: 'catalog-capture', taskQueue: sys.taskQueue });
    void catalogRun;
    const catalogHistory = await sys.client.workflow.getHandle('catalog-capture').fetchHistory();
    writeFileSync(
      path.join(OUT, 'catalog.json'),
      `${JSON.stringify({ workflowId: 'catalog-capture', history: JSON.parse(historyToJSON(catalogHistory)) }, null, 1)}\n`,
    );
    process.stdout.write('wrote tests/histories/catalog.json\n');
  } finally {
    await sys.stop();
  }
}

/** A durable approval (approved by the owner) and a policy denial of a hidden tool. */
async function captureSecurity(): Promise<void> {
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  const sys = await startSchoolSystem({ policy: { ...policy, approval: { tools: ['admin/add_user'], timeoutMs: 60_000, approverRoles: ['admin'] } } });
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', 'Add a teacher named Ada Approved');
    const seen = await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { stopAfter: (e) => e.event === 'approval_required', timeoutMs: 60_000 });
    const id = seen.find((e) => e.event === 'approval_required')?.data.toolCallId as string;
    await postJson(`${sys.apiUrl}/v1/turns/${body.turnId}/approvals/${id}`, { approve: true });
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-approval-approved', body.turnId);

    const student = bearer(await sys.token('student'));
    const denied = await postMessage(sys.apiUrl, 'replay', 'Add an admin named Mallory Root', student);
    await readSse(`${sys.apiUrl}${denied.body.eventsUrl as string}`, { timeoutMs: 60_000, headers: student });
    await save(sys, 'turn-policy-denial', denied.body.turnId);
  } finally {
    await sys.stop();
  }
}

/** A turn cancelled while process_payment was in flight. */
async function captureCancel(): Promise<void> {
  const sys = await startSchoolSystem({ toolDelays: 'process_payment=5000' });
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', "Process payment for student Bob's invoice");
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, {
      stopAfter: (e) => e.event === 'tool_call_started' && e.data.name === 'payments__process_payment',
      timeoutMs: 60_000,
    });
    await postJson(`${sys.apiUrl}/v1/turns/${body.turnId}/cancel`, {});
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-cancelled', body.turnId);
  } finally {
    await sys.stop();
  }
}

/**
 * A session over several runs: turns queued behind a slow one, one cancelled while it waited,
 * older messages summarized, continue-as-new after three turns; plus the queued turns themselves.
 */
async function captureSession(): Promise<void> {
  const rules: DemoRules = {
    model: 'demo-model',
    fallback: 'no script',
    scripts: [
      { name: 'say', match: '^say (.+)$', steps: [{ text: 'you said {{match.1}}' }] },
      { name: 'summarize', match: '^Summarize the conversation below \\((\\d+) messages\\)', steps: [{ text: 'DEMO-SUMMARY of {{match.1}} messages' }] },
    ],
  };
  const sys = await startSystem({
    rules,
    servers: () => ({}),
    host: { sessions: { maxTokenCount: 400, summarizationThreshold: 100, retainNewestMessages: 2, maxQueuedTurns: 4, transcriptLimit: 50, maxTurnsPerRun: 3 } },
  });
  try {
    const sessionId = 'replay-session';
    const wait = async (turnId: string) => {
      await readSse(`${sys.apiUrl}/v1/turns/${turnId}/events`, { timeoutMs: 60_000 });
    };
    const first = await postMessage(sys.apiUrl, sessionId, 'say hello there');
    await wait(first.body.turnId);
    sys.model.setFaults([{ delayMs: 1_500, times: 1 }]);
    const slow = await postMessage(sys.apiUrl, sessionId, 'say I am slow');
    const queued = await postMessage(sys.apiUrl, sessionId, 'say I waited my turn');
    const dropped = await postMessage(sys.apiUrl, sessionId, 'say never mind');
    await postJson(`${sys.apiUrl}/v1/turns/${dropped.body.turnId}/cancel`, {});
    await wait(queued.body.turnId);
    await wait(dropped.body.turnId);
    for (const text of ['four', 'five', 'six'].map((n) => `say ${n}: ${'a longer message, so the summary threshold is passed. '.repeat(2)}`)) {
      const r = await postMessage(sys.apiUrl, sessionId, text);
      await wait(r.body.turnId);
    }
    await new Promise((r) => setTimeout(r, 500));
    void slow;
    await save(sys, 'turn-session-queued', queued.body.turnId);
    await save(sys, 'turn-session-cancelled-while-queued', dropped.body.turnId);
    const workflowId = sessionWorkflowId(ownerKey({ id: DEMO_USERS.admin.sub, tenant: DEMO_USERS.admin.tenant }), sessionId);
    const runs: Array<{ runId: string; start: number }> = [];
    for await (const w of sys.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push({ runId: w.runId, start: w.startTime.getTime() });
    runs.sort((a, b) => a.start - b.start);
    for (const [i, run] of runs.entries()) {
      const history = await sys.client.workflow.getHandle(workflowId, run.runId).fetchHistory();
      // A run that has only started (no command yet) proves nothing, and cannot fail the negative control.
      if ((history.events?.length ?? 0) < 5) continue;
      const file = path.join(OUT, `session-run-${i + 1}.json`);
      writeFileSync(file, `${JSON.stringify({ workflowId, history: JSON.parse(historyToJSON(history)) }, null, 1)}\n`);
      process.stdout.write(`wrote ${path.relative(ROOT, file)} (${history.events?.length ?? 0} events)\n`);
    }
  } finally {
    await sys.stop();
  }
}

/** A tool call run through a turn without the model (the console's "try a tool"). */
async function captureDirect(): Promise<void> {
  const sys = await startSystem();
  try {
    const { body } = await postJson(`${sys.apiUrl}/v1/sessions/replay/tool-calls`, { server: 'notes', tool: 'add_note', arguments: { text: 'added by hand' } });
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-direct-tool-call', body.turnId);
  } finally {
    await sys.stop();
  }
}

/** A "remember that" turn (a notes write and everything's echo) and a direct call of the echo, saved under `names`. */
async function captureTurnAndDirectEcho(names: { turn: string; direct: string }, text: string, message: string): Promise<void> {
  const sys = await startSystem();
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', text);
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, names.turn, body.turnId);
    const direct = await postJson(`${sys.apiUrl}/v1/sessions/replay/tool-calls`, { server: 'everything', tool: 'echo', arguments: { message } });
    await readSse(`${sys.apiUrl}${direct.body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, names.direct, direct.body.turnId);
  } finally {
    await sys.stop();
  }
}

/** Turns since tool references: the catalog and LLM steps by name. */
async function captureRefs(): Promise<void> {
  await captureTurnAndDirectEcho({ turn: 'turn-refs-two-servers', direct: 'turn-refs-direct-tool-call' }, 'remember that names are enough', 'by reference');
}

/** Since read-only marks in the catalog: everything's echo runs as a local activity, the notes write as a regular one. */
async function captureReadOnly(): Promise<void> {
  await captureTurnAndDirectEcho({ turn: 'turn-read-only-local', direct: 'turn-read-only-direct' }, 'remember that reads stay local', 'locally');
}

/**
 * One step with a slow read-only lookup (admin's find_user, held 1.5 s by the school servers' delay
 * hook) beside a write (comms' send_email): since 'read-only-beside-regular' both go out as activity
 * tasks in one workflow task completion and run side by side (decision 0021).
 */
async function captureOverlap(): Promise<void> {
  const base = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const script = {
    name: 'look-up-and-mail',
    match: '(?i)^look up (\\w+) and tell the office',
    steps: [
      {
        toolCalls: [
          { name: 'admin__find_user', arguments: { query: '{{match.1}}', role: 'student' } },
          { name: 'comms__send_email', arguments: { to: 'office@school.example', subject: 'Looked up {{match.1}}', body: 'A lookup ran beside this mail.' } },
        ],
      },
      { text: 'Looked up {{match.1}} and told the office.' },
    ],
  };
  const sys = await startSchoolSystem({ toolDelays: 'find_user=1500', rules: { ...base, scripts: [script, ...(base.scripts ?? [])] } });
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', 'look up Bob and tell the office');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-read-only-beside-regular', body.turnId);
  } finally {
    await sys.stop();
  }
}

/**
 * A turn whose tool call waited for the user's OAuth consent (examples/servers/protected-server.ts):
 * the host's listing is authorized first, then the user's consent resumes the turn.
 */
async function captureOAuth(): Promise<void> {
  const remote = await startProtectedServer();
  const base = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const script = { name: 'whoami', match: '(?i)^who am i there', steps: [{ toolCalls: [{ name: 'private__whoami', arguments: {} }] }, { text: '{{tool:private__whoami}}' }] };
  const sys = await startSystem({
    rules: { ...base, scripts: [script, ...(base.scripts ?? [])] },
    tokenSealKey: 'capture-seal-key-0123456789abcdef-xyz-0',
    extraServers: { private: { url: remote.mcpUrl, transport: 'streamable-http', auth: { type: 'oauth' } } },
  });
  const consent = async (url: string, user: string): Promise<void> => {
    const request = /data-request="([^"]+)"/.exec(await (await fetch(url)).text())?.[1] ?? '';
    const answer = await fetch(`${remote.url}/consent?request=${request}&user=${user}&allow=1`, { redirect: 'manual' });
    await fetch(answer.headers.get('location') ?? '');
  };
  try {
    const servers = await getJson(`${sys.apiUrl}/v1/servers`);
    await consent(servers.body.servers.find((s: { server: string }) => s.server === 'private').authorizationUrl as string, 'operator');
    const { body } = await postMessage(sys.apiUrl, 'replay', 'who am i there?');
    const seen = await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { stopAfter: (e) => e.event === 'authorization_required', timeoutMs: 60_000 });
    await consent(seen.find((e) => e.event === 'authorization_required')?.data.authorizationUrl as string, 'ada');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-authorization-wait', body.turnId);
  } finally {
    await sys.stop();
    await remote.close();
  }
}

/**
 * A turn whose tool call asked its user something, answered through the API with `answer`: the
 * question comes from `text`'s script, on a system with `policy` (default: the example policy).
 */
async function captureAnswered(name: string, text: string, answer: Record<string, unknown>, policy?: Policy): Promise<void> {
  const sys = await startSystem(policy ? { policy } : {});
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', text);
    const seen = await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { stopAfter: (e) => e.event === 'input_required', timeoutMs: 60_000 });
    const id = String(seen.find((e) => e.event === 'input_required')?.data.toolCallId);
    await postJson(`${sys.apiUrl}/v1/turns/${body.turnId}/inputs/${id}`, answer);
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, name, body.turnId);
  } finally {
    await sys.stop();
  }
}

/** A form question (server-everything's elicitation tool); a page to open (URL mode); a sampling request waiting for the user's leave. */
async function captureElicitation(): Promise<void> {
  await captureAnswered('turn-elicitation-answered', 'ask me for my details', { action: 'accept', content: { name: 'Replay Tester' } });
}

async function captureUrlElicitation(): Promise<void> {
  await captureAnswered('turn-url-elicitation', 'send me to https://example.org/pay', { action: 'accept' });
}

async function captureSamplingApproval(): Promise<void> {
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  const sampling = policy.sampling ?? { servers: ['everything'], maxTokensPerRequest: 200, maxTokensPerTurn: 2000 };
  await captureAnswered('turn-sampling-approved', 'sample a haiku about leave', { action: 'accept' }, { ...policy, sampling: { ...sampling, approval: true } });
}

/** A turn whose tool call's server sampled the host's model (server-everything's sampling tool; policy.sampling). */
async function captureSampling(): Promise<void> {
  const sys = await startSystem();
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', 'sample a haiku about replays');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-sampling', body.turnId);
  } finally {
    await sys.stop();
  }
}

/**
 * A turn and its session as workers run them since tracing (the OpenTelemetry interceptors in the
 * bundle, trace context in the start, update, child and activity headers), with a tracer provider
 * in this process so the client's span is real.
 */
async function captureTraced(): Promise<void> {
  const provider = new BasicTracerProvider();
  provider.register();
  const sys = await startSystem();
  try {
    const { body } = await postMessage(sys.apiUrl, 'traced', 'remember that traces ride in headers');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-traced-two-servers', body.turnId);
    await save(sys, 'session-traced', sessionWorkflowId(ownerKey({ id: DEMO_USERS.admin.sub, tenant: DEMO_USERS.admin.tenant }), 'traced'));
  } finally {
    await sys.stop();
    await provider.shutdown();
  }
}

/**
 * A turn and its session with payloads sealed under the test key of tests/histories/sealed (as
 * fetched: ciphertext), for the replay of encoded histories after a key rotation.
 */
async function captureSealed(): Promise<void> {
  const dir = path.join(OUT, 'sealed');
  const keys = readFileSync(path.join(dir, 'payload-keys.txt'), 'utf8');
  const sys = await startSystem({ payloadKeys: parsePayloadKeys(keys, 'payload-keys.txt').map((k) => `${k.id}:${k.key.toString('base64')}`).join(',') });
  try {
    const { body } = await postMessage(sys.apiUrl, 'sealed', 'remember that sealed histories replay after a rotation');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-sealed-two-servers', body.turnId, dir);
    await save(sys, 'session-sealed', sessionWorkflowId(ownerKey({ id: DEMO_USERS.admin.sub, tenant: DEMO_USERS.admin.tenant }), 'sealed'), dir);
  } finally {
    await sys.stop();
  }
}

/**
 * A searched catalog (decision 0032): past a threshold of three tools the model gets the host's search
 * tool; it searches, then calls a tool it found; the LLM steps carry the caller.
 */
async function captureToolSearch(): Promise<void> {
  const rules: DemoRules = {
    model: 'demo-model',
    fallback: 'no script',
    scripts: [
      {
        name: 'search',
        match: '^find a tool to (.+)$',
        steps: [
          { toolCalls: [{ name: 'host__search_tools', arguments: { query: '{{match.1}}' } }] },
          { toolCalls: [{ name: 'everything__echo', arguments: { message: 'found by search' } }] },
          { text: 'echo: {{result.last}}' },
        ],
      },
    ],
  };
  await captureOneTurn('turn-tool-search', { rules, host: { toolSearch: { threshold: 3, offered: 2, results: 3 } } }, 'find a tool to echo a message');
}

/** Context by intent (decision 0032): a message an intent rule matches reads its resource, and the turn says why ('context-reasons'). */
async function captureContextIntent(): Promise<void> {
  const intents = [{ name: 'my-notes', match: 'my notes', resources: [{ server: 'notes', uri: 'notes://all' }] }];
  await captureOneTurn('turn-context-intent', { host: { intents } }, 'hello, what is in my notes?');
}

/** Adaptive context (decision 0036): the model lists the resources it may read, reads one, and answers with it. */
async function captureAdaptiveContext(): Promise<void> {
  const rules: DemoRules = {
    model: 'demo-model',
    fallback: 'no script',
    scripts: [
      {
        name: 'adaptive',
        match: '^what do my notes say\\?$',
        steps: [
          { toolCalls: [{ name: 'host__list_resources', arguments: {} }] },
          { toolCalls: [{ name: 'host__read_resource', arguments: { server: 'notes', uri: 'notes://all', reason: 'the user asked about their notes' } }] },
          { text: 'your notes: {{result.last}}' },
        ],
      },
    ],
  };
  await captureOneTurn('turn-adaptive-context', { rules, host: { adaptiveContext: { enabled: true } } }, 'what do my notes say?');
}

/** One message's turn on a system of its own, saved under `name`. */
async function captureOneTurn(name: string, options: Parameters<typeof startSystem>[0], text: string): Promise<void> {
  const sys = await startSystem(options);
  try {
    const { body } = await postMessage(sys.apiUrl, 'replay', text);
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, name, body.turnId);
  } finally {
    await sys.stop();
  }
}

/** `node capture-histories.js [basic] [school] [security] [cancel] [session] [direct] [refs] [read-only] [oauth] [elicitation] [sampling] [url-elicitation] [sampling-approval] [traced] [overlap] [sealed] [tool-search] [context-intent] [adaptive-context]`: the groups to capture (default all). */
async function all(): Promise<void> {
  const groups = process.argv.slice(2);
  const want = (g: string) => groups.length === 0 || groups.includes(g);
  if (want('basic')) await main();
  if (want('school')) await captureSchool();
  if (want('security')) await captureSecurity();
  if (want('cancel')) await captureCancel();
  if (want('session')) await captureSession();
  if (want('direct')) await captureDirect();
  if (want('refs')) await captureRefs();
  if (want('read-only')) await captureReadOnly();
  if (want('oauth')) await captureOAuth();
  if (want('elicitation')) await captureElicitation();
  if (want('sampling')) await captureSampling();
  if (want('url-elicitation')) await captureUrlElicitation();
  if (want('sampling-approval')) await captureSamplingApproval();
  if (want('traced')) await captureTraced();
  if (want('overlap')) await captureOverlap();
  if (want('sealed')) await captureSealed();
  if (want('tool-search')) await captureToolSearch();
  if (want('context-intent')) await captureContextIntent();
  if (want('adaptive-context')) await captureAdaptiveContext();
}

all().catch((err: unknown) => {
  process.stderr.write(`capture-histories: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
