/**
 * The context strategies' rig (issue 28 §2, decisions 0032 and 0036): the real turn workflow and the
 * real activities on a dev server of their own, over the five school servers and the notes server
 * (stdio, one school store), with the demo model (examples/demo-model/rules.json) answering over HTTP
 * through the OpenAI-compatible adapter. Each turn's context is what the strategy chooses: the role's
 * (examples/host.json), the intent rules' (./context-strategies.ts), or none with the host's resource
 * tools offered.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { createActivities } from '../../src/activities';
import { DEMO_USERS } from '../../src/config/local-mode';
import { loadPolicyFile } from '../../src/config/policy';
import { turnOptionsFrom } from '../../src/config';
import { DEFAULT_ADAPTIVE_CONTEXT, type AdaptiveContextSettings } from '../../src/core/adaptive-context';
import { policyForRole } from '../../src/core/policy';
import type { DemoRules } from '../../src/demo-model/rules';
import { startDemoModel, type RecordedRequest } from '../../src/demo-model/server';
import { createLlmClient } from '../../src/llm/client';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import type { TurnState } from '../../src/shared/turn';
import type { UserContext } from '../../src/shared/user';
import { createArgumentValidator } from '../../src/validation/json-schema';
import { TURN_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import type { turnWorkflow } from '../../src/workflows/turn';
import { SCHOOL } from '../../tests/helpers/school';
import { EXAMPLE_RULES, NOTES_SERVER, ROOT } from '../../tests/helpers/system';
import { newTurnId, startWorker, startWorkflowEnv } from '../../tests/workflows/harness';
import { contextOf, HOST, PATTERNS, type Strategy } from './context-strategies';

export interface ContextTurn {
  state: TurnState;
  /** The request bodies the model stand-in received in this turn, in order. */
  bodies: unknown[];
  /** Resource reads the host made for it (the context activity's and host__read_resource's). */
  reads: number;
}

export interface ContextRig {
  /** Puts the school store and the notes back as seeded, so every strategy starts from the same data. */
  reset(): void;
  runTurn(strategy: Strategy, pattern: (typeof PATTERNS)[number]): Promise<ContextTurn>;
  stop(): Promise<void>;
}

const modelBodies = (recorded: readonly RecordedRequest[]): unknown[] => recorded.filter((r) => r.method === 'POST' && r.path.endsWith('/chat/completions')).map((r) => r.body);

export async function startContextRig(): Promise<ContextRig> {
  const dir = mkdtempSync(path.join(tmpdir(), 'dmh-bench-context-'));
  const data = path.join(dir, 'school.json');
  const notes = path.join(dir, 'notes.json');
  const stdio = (script: string) => ({ command: process.execPath, args: [script, '--stdio', '--data', data] });
  const servers = Object.fromEntries(['admin', 'payments', 'comms', 'student', 'teacher'].map((s) => [s, stdio(SCHOOL(s))]));
  writeFileSync(notes, `${JSON.stringify({ notes: [], idempotency: {} })}\n`);
  const config = parseMcpConfig({ mcpServers: { ...servers, notes: { command: process.execPath, args: [NOTES_SERVER, '--stdio', '--data', notes] } } }, process.env, ROOT);
  const hub = new McpServerHub(config, { logger: pino({ level: 'silent' }) });
  const model = await startDemoModel({ rules: JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules });
  const env = await startWorkflowEnv();
  const settings: AdaptiveContextSettings = { ...DEFAULT_ADAPTIVE_CONTEXT };
  let reads = 0;
  const activities = createActivities({
    hub: {
      catalog: () => hub.catalog(),
      callTool: (r) => hub.callTool(r),
      status: () => hub.status(),
      close: () => hub.close(),
      listResources: (server, opts) => hub.listResources(server, opts),
      readResource: (server, uri, opts) => {
        reads += 1;
        return hub.readResource(server, uri, opts);
      },
      getPrompt: (server, name, args, opts) => hub.getPrompt(server, name, args, opts),
    },
    llm: createLlmClient({ baseUrl: model.url, model: 'demo-model', apiKey: 'not-needed', timeoutMs: 60_000 }),
    validator: createArgumentValidator(),
    logger: pino({ level: 'silent' }),
    secrets: [],
    adaptiveContext: () => settings,
  });
  const worker = await startWorker(env, activities);
  await hub.connectAll();
  // The servers seed the store when they start; every strategy starts from that copy.
  if (!existsSync(data)) throw new Error(`the school servers did not seed ${data}`);
  copyFileSync(data, `${data}.seed`);
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  return {
    reset() {
      copyFileSync(`${data}.seed`, data);
      writeFileSync(notes, `${JSON.stringify({ notes: [], idempotency: {} })}\n`);
    },
    async runTurn(strategy, pattern) {
      const demo = DEMO_USERS[pattern.as];
      const user: UserContext = { id: demo.sub, role: demo.role, tenant: demo.tenant, scopes: [...demo.scopes] };
      settings.enabled = strategy === 'adaptive';
      model.resetRequests();
      reads = 0;
      const id = newTurnId(`context-${strategy}`);
      const state = await env.client.workflow.execute<typeof turnWorkflow>(TURN_WORKFLOW_TYPE, {
        workflowId: id,
        taskQueue: worker.taskQueue,
        args: [
          {
            turnId: id,
            sessionId: 'bench-context',
            userText: pattern.text,
            user,
            policy: policyForRole(policy, user.role),
            history: [],
            options: { ...turnOptionsFrom(HOST), context: contextOf(strategy, user.role, pattern.text) },
          },
        ],
      });
      return { state, bodies: modelBodies(model.requests()), reads };
    },
    async stop() {
      await worker.stop();
      await env.stop();
      await hub.close();
      await model.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
