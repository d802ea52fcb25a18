/**
 * The 300-tool rig (docs/decisions/0032): the real turn workflow and the real activities on a dev
 * server, over the 12 stand-in servers of ./many-tools.ts, with its scripted searching model. Shared by
 * tests/workflows/tool-search.test.ts and the bench's tool-search section.
 */
import pino from 'pino';
import { createActivities } from '../../src/activities';
import { DEFAULT_TOOL_SEARCH, type ToolSearchSettings } from '../../src/core/tool-search';
import { parseMcpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import type { Policy } from '../../src/shared/policy';
import type { LlmRequest, TurnInput, TurnState } from '../../src/shared/turn';
import type { UserContext } from '../../src/shared/user';
import { createArgumentValidator } from '../../src/validation/json-schema';
import { TURN_WORKFLOW_TYPE } from '../../src/workflows/definitions';
import type { turnWorkflow } from '../../src/workflows/turn';
import { newTurnId, startWorker, startWorkflowEnv, turnInput } from '../workflows/harness';
import { offeredTokens, searchingModel, startManyServers } from './many-tools';

export interface ToolSearchRig {
  hub: McpServerHub;
  /** The worker's toolSearch settings, as the host config's reload would change them. */
  settings: ToolSearchSettings;
  /** Runs one turn of `user` to its end: its state, the model's requests and the tool-list tokens they offered. */
  runTurn(label: string, userText: string, user: UserContext, policy: Policy, overrides?: Partial<TurnInput>): Promise<{ state: TurnState; requests: LlmRequest[]; tokens: number }>;
  stop(): Promise<void>;
}

export async function startToolSearchRig(): Promise<ToolSearchRig> {
  const servers = await startManyServers();
  const config = parseMcpConfig({ mcpServers: Object.fromEntries(Object.entries(servers.urls).map(([n, url]) => [n, { url }])) }, {}, process.cwd());
  const hub = new McpServerHub(config, { logger: pino({ level: 'silent' }) });
  const env = await startWorkflowEnv();
  const model = searchingModel();
  const rig: ToolSearchRig = {
    hub,
    settings: { ...DEFAULT_TOOL_SEARCH },
    async runTurn(label, userText, user, policy, overrides = {}) {
      const id = newTurnId(label);
      const state = await env.client.workflow.execute<typeof turnWorkflow>(TURN_WORKFLOW_TYPE, {
        workflowId: id,
        taskQueue: worker.taskQueue,
        args: [turnInput(id, { userText, user, policy, ...overrides })],
      });
      const requests = model.requests.filter((r) => r.turnId === id);
      return { state, requests, tokens: requests.reduce((n, q) => n + offeredTokens(q.tools), 0) };
    },
    async stop() {
      await worker.stop();
      await env.stop();
      await hub.close();
      await servers.close();
    },
  };
  const activities = createActivities({
    hub: { ...hub, catalog: () => hub.catalog(), callTool: (r) => hub.callTool(r), readResource: () => Promise.reject(new Error('n/a')), getPrompt: () => Promise.reject(new Error('n/a')), status: () => hub.status(), close: () => hub.close() },
    llm: model,
    validator: createArgumentValidator(),
    logger: pino({ level: 'silent' }),
    secrets: [],
    toolSearch: () => rig.settings,
  });
  const worker = await startWorker(env, activities);
  return rig;
}
