/**
 * `npm start -- --config <file>`: the user's own MCP servers on one machine. The example servers are
 * not started and the school's host config and policy do not apply; unless the user names their own
 * (HOST_CONFIG, POLICY_FILE), these defaults do:
 *
 * - a host config with a neutral prompt that names the configured servers and no context to read
 *   (nothing is read from servers the user did not ask for);
 * - a local-mode policy: the demo roles may use every tool of the configured servers. That is a
 *   development convenience, printed as a warning at start; deployments set POLICY_FILE, and a
 *   policy denies by default.
 */
import type { Policy } from '../shared/policy';

/** The school seed's demo users (examples/servers/school/store.ts), their roles and the scopes they hold. */
export const DEMO_USERS = {
  admin: { sub: 'u-ada', role: 'admin', tenant: 'demo', scopes: ['admin.super'] },
  teacher: { sub: 'u-tom', role: 'teacher', tenant: 'demo', scopes: ['teacher.homework', 'teacher.attendance', 'comms.send'] },
  student: { sub: 'u-bob', role: 'student', tenant: 'demo', scopes: ['student.read', 'student.submit'] },
} as const;
export type DemoRole = keyof typeof DEMO_USERS;

/** The roles `npm run token` mints by default (src/cli/mint-token.ts). */
export const LOCAL_ROLES = Object.keys(DEMO_USERS) as DemoRole[];

export function localPolicy(servers: readonly string[]): Policy {
  const rule = { servers: Object.fromEntries(servers.map((s) => [s, { tools: '*' as const }])) };
  return { roles: Object.fromEntries(LOCAL_ROLES.map((role) => [role, rule])), toolScopes: {} };
}

export function localHostConfig(servers: readonly string[]): { systemPrompt: string; context: { resources: []; prompts: [] } } {
  const names = servers.length ? servers.join(', ') : 'none';
  return {
    systemPrompt:
      `You are a helpful assistant with tools from these MCP servers: ${names}. ` +
      'Use the tools when they help, and say so plainly when a tool or a service fails.',
    context: { resources: [], prompts: [] },
  };
}

/** The line `npm start` prints about the local-mode policy. */
export function localPolicyWarning(servers: readonly string[]): string {
  return (
    `policy: LOCAL MODE: the demo roles (${LOCAL_ROLES.join(', ')}) may use every tool of ${servers.length ? servers.join(', ') : 'no server'}; ` +
    'set POLICY_FILE to your own policy before anyone else can reach this API (a policy denies by default).'
  );
}
