import { createActivities } from '../../src/activities';
import { DEFAULT_ADAPTIVE_CONTEXT, type AdaptiveContextSettings } from '../../src/core/adaptive-context';
import type { LlmClient } from '../../src/llm/provider';
import type { AuditRequest } from '../../src/shared/audit';
import { USER_CONTEXT_META_KEY } from '../../src/shared/meta';
import type { Policy } from '../../src/shared/policy';
import type { Catalog } from '../../src/shared/tool-types';
import type { LlmRequest, LlmResponse, TurnState } from '../../src/shared/turn';
import type { UserContext } from '../../src/shared/user';
import { scriptedModel } from '../helpers/scripted-model';
import { createArgumentValidator } from '../../src/validation/json-schema';
import { TURN_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import type { turnWorkflow } from '../../src/workflows/turn';
import pino from 'pino';
import { callTools, newTurnId, OWNER, say, startWorker, startWorkflowEnv, turnInput, turnOptions, type RunningWorker, type WorkflowEnv } from './harness';

/**
 * Adaptive context (docs/decisions/0036): the real turn workflow and the real activities, a scripted
 * model that lists the resources it may read, reads the one it needs and answers with its content. The
 * policy decides what a caller may list and read; a read is bounded; the trace says why it was read.
 */
jest.setTimeout(180_000);

/** Members read every docs resource and billing's invoices; clerks only docs' handbook. */
const POLICY: Policy = {
  roles: {
    member: { servers: { docs: { tools: '*', resources: '*' }, billing: { tools: '*', resources: ['billing://invoices/*'] } } },
    clerk: { servers: { docs: { tools: [], resources: ['docs://handbook'] } } },
  },
  toolScopes: {},
};
const CLERK: UserContext = { id: 'u-clerk', role: 'clerk', tenant: 't-one', scopes: [] };

const RESOURCES: Record<string, Record<string, string>> = {
  docs: { 'docs://handbook': 'Refunds are paid within 14 days.', 'docs://huge': 'x'.repeat(50_000) },
  billing: { 'billing://invoices/1042': 'Invoice 1042: 300 EUR, due 2026-12-01.', 'billing://secrets': 'the vault code is 1234' },
};
const CATALOG: Catalog = {
  tools: [{ name: 'docs__search', server: 'docs', tool: 'search', description: 'search docs', inputSchema: { type: 'object' } }],
  servers: ['docs', 'billing'].map((server) => ({ server, transport: 'stdio' as const, state: 'connected' as const, toolCount: server === 'docs' ? 1 : 0 })),
};

/** Scripted: list, then read what the user's message names (`read <server> <uri>`), then answer with what it heard. */
function readingModel(): LlmClient & { requests: LlmRequest[] } {
  const answer = (req: LlmRequest): LlmResponse => {
    const user = req.messages.find((m) => m.role === 'user');
    const [, server, uri] = /^read (\S+) (\S+)$/.exec(typeof user?.content === 'string' ? user.content : '') ?? [];
    const last = req.messages.at(-1);
    const heard = last?.role === 'tool' && typeof last.content === 'string' ? last.content : '';
    if (req.step === 1) return callTools(['c1', 'host__list_resources', {}]);
    if (req.step === 2) return callTools(['c2', 'host__read_resource', { server, uri, reason: 'the user asked about it' }]);
    return say(`listed then read: ${heard}`);
  };
  return scriptedModel('reading-model', answer);
}

let env: WorkflowEnv;
let worker: RunningWorker;
const model = readingModel();
const audit: AuditRequest[] = [];
const reads: Array<{ server: string; uri: string; meta: unknown }> = [];
const settings: AdaptiveContextSettings = { ...DEFAULT_ADAPTIVE_CONTEXT, enabled: true, maxResourceChars: 1_000 };

beforeAll(async () => {
  env = await startWorkflowEnv();
  const activities = createActivities({
    hub: {
      catalog: () => Promise.resolve(CATALOG),
      callTool: () => Promise.resolve({ isError: false, text: 'ok' }),
      status: () => Promise.resolve(CATALOG.servers),
      close: () => Promise.resolve(),
      listResources: (server) => Promise.resolve(Object.keys(RESOURCES[server] ?? {}).map((uri) => ({ uri, name: uri.split('/').at(-1) ?? uri }))),
      readResource: (server, uri, opts) => {
        reads.push({ server, uri, meta: opts?.meta });
        const text = RESOURCES[server]?.[uri];
        return text === undefined ? Promise.reject(new Error(`no resource ${uri}`)) : Promise.resolve(text);
      },
      getPrompt: () => Promise.reject(new Error('no prompts')),
    },
    llm: model,
    validator: createArgumentValidator(),
    logger: pino({ level: 'silent' }),
    secrets: [],
    audit: { append: (e) => Promise.resolve(audit.push(e as AuditRequest)) },
    adaptiveContext: () => settings,
  });
  worker = await startWorker(env, activities);
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await env?.stop();
});

async function runTurn(label: string, userText: string, user: UserContext = OWNER): Promise<{ state: TurnState; requests: LlmRequest[] }> {
  const id = newTurnId(label);
  const state = await env.client.workflow.execute<typeof turnWorkflow>(TURN_WORKFLOW_TYPE, {
    workflowId: id,
    taskQueue: worker.taskQueue,
    args: [turnInput(id, { userText, user, policy: POLICY, options: turnOptions({ maxToolResultChars: 5_000 }) })],
  });
  return { state, requests: model.requests.filter((r) => r.turnId === id) };
}

const notices = (state: TurnState) => state.events.filter((e) => e.type === 'notice').map((e) => e.data);

test('the model lists what it may read, reads what it needs, and answers with it; the trace says why', async () => {
  const { state, requests } = await runTurn('read', 'read billing billing://invoices/1042');
  expect(state.status).toBe('completed');
  // Offered the host's resource tools beside the catalog's.
  expect(requests[0]?.tools.map((t) => t.name)).toEqual(['docs__search', 'host__list_resources', 'host__read_resource']);
  const [list, read] = state.toolCalls;
  expect(list?.name).toBe('host__list_resources');
  // The listing holds what the policy lets a member read, nothing else.
  expect(list?.result).toContain('docs docs://handbook');
  expect(list?.result).toContain('billing billing://invoices/1042');
  expect(list?.result).not.toContain('billing://secrets');
  expect(read?.name).toBe('host__read_resource');
  expect(state.text).toBe('listed then read: billing://invoices/1042 from billing:\nInvoice 1042: 300 EUR, due 2026-12-01.');
  // Read for this caller (its context in `_meta`, as role context is), audited, and traced with its reason.
  expect(reads.at(-1)).toEqual({ server: 'billing', uri: 'billing://invoices/1042', meta: { [USER_CONTEXT_META_KEY]: expect.objectContaining({ id: OWNER.id, tenant: OWNER.tenant }) } });
  expect(audit.filter((a) => a.toolCallId === 'c2').map((a) => [a.kind, a.outcome])).toEqual([['tool_call', undefined], ['tool_result', 'ok']]);
  expect(notices(state)).toContainEqual({
    code: 'context_chosen',
    message: 'Context: billing://invoices/1042 from billing (model: the user asked about it)',
    toolCallId: 'c2',
    pieces: [{ kind: 'resource', server: 'billing', ref: 'billing://invoices/1042', because: 'model: the user asked about it', read: true }],
  });
});

test('a caller without access to a resource gets a clear refusal, audited, and nothing is read', async () => {
  const before = reads.length;
  const { state } = await runTurn('refused', 'read billing billing://invoices/1042', CLERK);
  expect(state.status).toBe('completed');
  // A clerk's listing has the handbook only.
  expect(state.toolCalls[0]?.result).toBe('1 resource you may read with host__read_resource:\n- docs docs://handbook: handbook');
  expect(state.toolCalls[1]?.isError).toBe(true);
  expect(state.text).toBe('listed then read: Error: Denied by policy: role "clerk" may not read billing://invoices/1042 of billing. Read only resources host__list_resources lists.');
  expect(reads.length).toBe(before);
  expect(audit.some((a) => a.actor.id === CLERK.id && a.kind === 'denial' && a.server === 'host' && a.tool === 'read_resource')).toBe(true);
  expect(notices(state).find((n) => n['code'] === 'context_chosen')?.['pieces']).toEqual([
    { kind: 'resource', server: 'billing', ref: 'billing://invoices/1042', because: 'model: the user asked about it', read: false },
  ]);
});

test('an oversize resource is cut to maxResourceChars before it enters the history', async () => {
  const { state } = await runTurn('huge', 'read docs docs://huge');
  expect(state.status).toBe('completed');
  const result = state.toolCalls[1]?.result ?? '';
  expect(result.length).toBeLessThanOrEqual(settings.maxResourceChars);
  expect(result.startsWith('docs://huge from docs:\nxxx')).toBe(true);
  expect(result).toMatch(/cut|truncated|more/i);
});

test('turned off in the host config, the model is offered no resource tools', async () => {
  settings.enabled = false;
  try {
    const { requests } = await runTurn('off', 'read docs docs://handbook');
    expect(requests[0]?.tools.map((t) => t.name)).toEqual(['docs__search']);
  } finally {
    settings.enabled = true;
  }
});
