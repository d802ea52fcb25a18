/**
 * History capture groups on the example system (tests/helpers/system.ts: the demo model and the example
 * servers); tests/tools/capture-histories.ts runs them.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { DemoRules } from '../../src/demo-model/rules';
import { startProtectedServer } from '../../examples/servers/protected-server';
import { getJson, postJson, postMessage, readSse } from '../helpers/http';
import { DEMO_USERS, EXAMPLE_RULES, ROOT, startSystem } from '../helpers/system';
import { ownerKey } from '../../src/api/gateway';
import { sessionWorkflowId } from '../../src/shared/ids';
import { legacySessionIds } from '../../src/legacy-sessions';
import type { SessionMemory } from '../../src/shared/session';
import type { TurnResult } from '../../src/shared/turn';
import { SESSION_MEMORY_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import { loadPolicyFile } from '../../src/config/policy';
import { parsePayloadKeys } from '../../src/config/payload-keys';
import { OUT, captureAnswered, captureOneTurn, captureTurnAndDirectEcho, save, writeHistory } from './history-capture';

/** Turns on the example servers (two servers, text only, an unknown tool, the model refused or retried) and the catalog workflow. */
export async function captureBasic(): Promise<void> {
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
      writeHistory(path.join(OUT, `${s.name}.json`), body.turnId, await sys.client.workflow.getHandle(body.turnId).fetchHistory());
    }
    const catalogRun = await sys.client.workflow.execute('catalogWorkflow', { workflowId: 'catalog-capture', taskQueue: sys.taskQueue });
    void catalogRun;
    writeHistory(path.join(OUT, 'catalog.json'), 'catalog-capture', await sys.client.workflow.getHandle('catalog-capture').fetchHistory());
  } finally {
    await sys.stop();
  }
}

/**
 * A session as the chain of its turns (decision 0033): a turn queued behind a slow one, one cancelled
 * while it waited, and one whose memory outgrew the threshold and was summarized. (The session
 * workflows' own histories, session-run-*.json, are retired with that workflow: decision 0041.)
 */
export async function captureSession(): Promise<void> {
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
    void slow;
    await save(sys, 'turn-chain-queued', queued.body.turnId);
    await save(sys, 'turn-chain-cancelled-while-queued', dropped.body.turnId);
    // The last turn: its memory passed the threshold, so it summarized before it ended.
    const last = await postMessage(sys.apiUrl, sessionId, `say seven: ${'a longer message, so the summary threshold is passed. '.repeat(2)}`);
    await sys.client.workflow.getHandle(last.body.turnId).result();
    await save(sys, 'turn-chain-summarized', last.body.turnId);
    // A new session of two short turns: the first needs no summary, so it hands its memory on ahead of
    // its stream's end; the API has it when the second comes, and starts that turn with it (no read).
    const eight = await postMessage(sys.apiUrl, 'replay-handed-on', 'say eight');
    await wait(eight.body.turnId);
    // A new session's first turn: the API tells it so, and it reads nothing (the catalog's marker only).
    await sys.client.workflow.getHandle(eight.body.turnId).result();
    const firstEvents = (await sys.client.workflow.getHandle(eight.body.turnId).fetchHistory()).events ?? [];
    if (firstEvents.filter((e) => e.markerRecordedEventAttributes).length !== 1) throw new Error("a new session's first turn read the turns before");
    await save(sys, 'turn-chain-first', eight.body.turnId);
    const nine = await postMessage(sys.apiUrl, 'replay-handed-on', 'say nine');
    await sys.client.workflow.getHandle(nine.body.turnId).result();
    const { events } = await sys.client.workflow.getHandle(nine.body.turnId).fetchHistory();
    const started = events?.[0]?.workflowExecutionStartedEventAttributes;
    if (!started || (events ?? []).filter((e) => e.markerRecordedEventAttributes).length !== 1) throw new Error('the turn after a short one read the turn before');
    await save(sys, 'turn-chain-handed-on', nine.body.turnId);
  } finally {
    await sys.stop();
  }
}

/** A tool call run through a turn without the model (the console's "try a tool"). */
export async function captureDirect(): Promise<void> {
  const sys = await startSystem();
  try {
    const { body } = await postJson(`${sys.apiUrl}/v1/sessions/replay/tool-calls`, { server: 'notes', tool: 'add_note', arguments: { text: 'added by hand' } });
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-direct-tool-call', body.turnId);
  } finally {
    await sys.stop();
  }
}

/** Turns since tool references: the catalog and LLM steps by name. */
export async function captureRefs(): Promise<void> {
  await captureTurnAndDirectEcho({ turn: 'turn-refs-two-servers', direct: 'turn-refs-direct-tool-call' }, 'remember that names are enough', 'by reference');
}

/** Since read-only marks in the catalog: everything's echo runs as a local activity, the notes write as a regular one. */
export async function captureReadOnly(): Promise<void> {
  await captureTurnAndDirectEcho({ turn: 'turn-read-only-local', direct: 'turn-read-only-direct' }, 'remember that reads stay local', 'locally');
}

/**
 * A turn whose tool call waited for the user's OAuth consent (examples/servers/protected-server.ts):
 * the host's listing is authorized first, then the user's consent resumes the turn.
 */
export async function captureOAuth(): Promise<void> {
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
 * A form question (server-everything's elicitation tool); a page to open (URL mode); a sampling request
 * waiting for the user's leave. The form is answered while the call holds it (issue 22 §2):
 * `turn-elicitation-held`; `turn-elicitation-answered` (kept) has the re-issue of the workers before.
 */
export async function captureElicitation(): Promise<void> {
  await captureAnswered('turn-elicitation-held', 'ask me for my details', { action: 'accept', content: { name: 'Replay Tester' } });
}

export async function captureUrlElicitation(): Promise<void> {
  await captureAnswered('turn-url-elicitation', 'send me to https://example.org/pay', { action: 'accept' });
}

export async function captureSamplingApproval(): Promise<void> {
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  const sampling = policy.sampling ?? { servers: ['everything'], maxTokensPerRequest: 200, maxTokensPerTurn: 2000 };
  await captureAnswered('turn-sampling-approved', 'sample a haiku about leave', { action: 'accept' }, { ...policy, sampling: { ...sampling, approval: true } });
}

/** A turn whose tool call's server sampled the host's model (server-everything's sampling tool; policy.sampling). */
export async function captureSampling(): Promise<void> {
  await captureOneTurn('turn-sampling', {}, 'sample a haiku about replays');
}

/**
 * A turn as workers run them since tracing (the OpenTelemetry interceptors in the
 * bundle, trace context in the start, update, child and activity headers), with a tracer provider
 * in this process so the client's span is real.
 */
export async function captureTraced(): Promise<void> {
  const provider = new BasicTracerProvider();
  provider.register();
  const sys = await startSystem();
  try {
    const { body } = await postMessage(sys.apiUrl, 'traced', 'remember that traces ride in headers');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-traced-two-servers', body.turnId);
  } finally {
    await sys.stop();
    await provider.shutdown();
  }
}

/**
 * A turn with payloads sealed under the test key of tests/histories/sealed (as
 * fetched: ciphertext), for the replay of encoded histories after a key rotation.
 */
export async function captureSealed(): Promise<void> {
  const dir = path.join(OUT, 'sealed');
  const keys = readFileSync(path.join(dir, 'payload-keys.txt'), 'utf8');
  const sys = await startSystem({ payloadKeys: parsePayloadKeys(keys, 'payload-keys.txt').map((k) => `${k.id}:${k.key.toString('base64')}`).join(',') });
  try {
    const { body } = await postMessage(sys.apiUrl, 'sealed', 'remember that sealed histories replay after a rotation');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    await save(sys, 'turn-sealed-two-servers', body.turnId, dir);
  } finally {
    await sys.stop();
  }
}

/**
 * A searched catalog (decision 0032): past a threshold of three tools the model gets the host's search
 * tool; it searches, then calls a tool it found; the LLM steps carry the caller.
 */
export async function captureToolSearch(): Promise<void> {
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
export async function captureContextIntent(): Promise<void> {
  const intents = [{ name: 'my-notes', match: 'my notes', resources: [{ server: 'notes', uri: 'notes://all' }] }];
  await captureOneTurn('turn-context-intent', { host: { intents } }, 'hello, what is in my notes?');
}

/** A model per caller role (decision 0042): the admin's turn asks the host config's `claude` (Anthropic's adapter, the demo model's stand-in). */
export async function captureModelByRole(): Promise<void> {
  await captureOneTurn(
    'turn-model-by-role',
    {
      host: { modelByRole: { admin: 'claude' } },
      hostFor: (model) => ({ models: { claude: { provider: 'anthropic', model: 'demo-model', baseUrl: model.origin } } }),
    },
    'remember that each role may have its own model',
  );
}

/** Adaptive context (decision 0036): the model lists the resources it may read, reads one, and answers with it. */
export async function captureAdaptiveContext(): Promise<void> {
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

/**
 * A session begun in a session workflow and migrated (decision 0041): its carrier, started under the
 * session workflow's id with what that held, and the session's next turn, whose chain reads it.
 */
export async function captureSessionMemory(): Promise<void> {
  const sys = await startSystem();
  try {
    const sessionId = 'replay-migrated';
    const owner = { id: DEMO_USERS.admin.sub, tenant: DEMO_USERS.admin.tenant };
    const workflowId = sessionWorkflowId(ownerKey(owner), sessionId);
    const at = new Date().toISOString();
    const old = { turnId: 'turn-replay-migrated-old', at, status: 'completed' as const };
    const carried: SessionMemory = {
      view: {
        sessionId,
        owner,
        messages: [
          { ...old, index: 0, role: 'user', content: 'remember that the old protocol is gone' },
          { ...old, index: 1, role: 'assistant', content: 'noted' },
        ],
        totalMessages: 2,
        turnsCompleted: 1,
        queuedTurnIds: [],
        run: 1,
      },
      memory: { messages: [{ role: 'user', content: 'remember that the old protocol is gone' }, { role: 'assistant', content: 'noted' }] },
    };
    await sys.client.workflow.execute(SESSION_MEMORY_WORKFLOW_TYPE, { workflowId, taskQueue: sys.taskQueue, args: [carried] });
    await save(sys, 'session-memory', workflowId);
    // The API lists the sessions begun before the chain by visibility at its first message: once the carrier shows there.
    for (let tries = 0; !(await legacySessionIds(sys.client)(workflowId)); tries++) {
      if (tries > 200) throw new Error('the carrier never showed in visibility');
      await new Promise((r) => setTimeout(r, 50));
    }
    const { body } = await postMessage(sys.apiUrl, sessionId, 'hello again');
    await readSse(`${sys.apiUrl}${body.eventsUrl as string}`, { timeoutMs: 60_000 });
    const result = (await sys.client.workflow.getHandle(body.turnId).result()) as TurnResult;
    if (result.memory?.messages[0]?.content !== 'remember that the old protocol is gone') throw new Error('the turn did not begin with the carried memory');
    await save(sys, 'turn-chain-legacy-memory', body.turnId);
  } finally {
    await sys.stop();
  }
}
