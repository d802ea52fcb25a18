/**
 * The activities as the tool-call tests use them: a real hub over `config`, quiet logs, the real
 * argument validator, no model (tool calls never reach it), and heartbeats every 100 ms.
 */
import pino from 'pino';
import { createActivities, type ActivityDeps } from '../../src/activities';
import type { LlmClient } from '../../src/llm/client';
import type { McpConfig } from '../../src/mcp/config';
import { McpServerHub } from '../../src/mcp/pool';
import { createArgumentValidator } from '../../src/validation/json-schema';

export function toolActivities(config: McpConfig, extra: Partial<ActivityDeps> = {}): { hub: McpServerHub; acts: ReturnType<typeof createActivities> } {
  const hub = new McpServerHub(config, { logger: pino({ level: 'silent' }) });
  const acts = createActivities({
    hub,
    llm: {} as LlmClient,
    validator: createArgumentValidator(),
    logger: pino({ level: 'silent' }),
    secrets: [],
    heartbeatEveryMs: 100,
    ...extra,
  });
  return { hub, acts };
}
