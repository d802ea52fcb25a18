import path from 'node:path';
import { loadHostConfig } from '../../src/config';
import { HostConfigSchema } from '../../src/config/host-schema';
import { crossCheck } from '../../src/config/cross-check';
import { localHostConfig, localPolicy } from '../../src/config/local-mode';
import { loadPolicyFile } from '../../src/config/policy';
import { loadMcpConfig } from '../../src/mcp/config';
import type { Policy } from '../../src/shared/policy';

const ROOT = path.resolve(__dirname, '../..');

test('the example files name only servers the example MCP config has', () => {
  const mcp = loadMcpConfig(path.join(ROOT, 'examples/mcp.json'), { PAYMENTS_SERVER_URL: 'http://127.0.0.1:4020/mcp' });
  const problems = crossCheck({
    servers: Object.keys(mcp.mcpServers),
    host: loadHostConfig(path.join(ROOT, 'examples/host.json')),
    policy: loadPolicyFile(path.join(ROOT, 'examples/policy.json')),
    hostSource: 'host.json',
    policySource: 'policy.json',
  });
  expect(problems).toEqual([]);
});

test('the school host config and policy against a pasted config name every mismatch precisely', () => {
  const problems = crossCheck({
    servers: ['everything'],
    host: HostConfigSchema.parse({
      context: { resources: [{ server: 'notes', uri: 'notes://all' }] },
      contextByRole: { admin: { resources: [{ server: 'everything', uri: 'demo://resource/static/document/architecture.md' }], prompts: [{ server: 'admin', name: 'status' }] } },
    }),
    policy: {
      roles: { teacher: { servers: { notes: { tools: '*' }, '*': { tools: ['echo'] } } } },
      toolScopes: { 'payments/process_payment': ['payments.charge'], 'everything/echo': ['x'] },
      approval: { tools: ['payments/refund_*'], timeoutMs: 1000, approverRoles: ['admin'] },
    },
    hostSource: 'host.json',
    policySource: 'policy.json',
  });
  expect(problems).toEqual([
    'host.json: context.resources[0]: server "notes" (notes://all) is not configured (configured servers: everything)',
    'host.json: contextByRole.admin.prompts[0]: server "admin" (prompt status) is not configured (configured servers: everything)',
    'policy.json: roles.teacher.servers.notes: no such server is configured (configured servers: everything)',
    'policy.json: toolScopes["payments/process_payment"]: server "payments" is not configured (configured servers: everything)',
    'policy.json: approval.tools: "payments/refund_*": server "payments" is not configured (configured servers: everything)',
  ]);
});

test('local mode: the demo roles may use the configured servers, no context is read, and it all cross-checks', () => {
  const servers = ['everything', 'files'];
  const policy: Policy = localPolicy(servers);
  expect(Object.keys(policy.roles)).toEqual(['admin', 'teacher', 'student']);
  expect(policy.roles['student']?.servers).toEqual({ everything: { tools: '*' }, files: { tools: '*' } });
  const host = HostConfigSchema.parse(localHostConfig(servers));
  expect(host.context).toEqual({ resources: [], prompts: [] });
  expect(host.systemPrompt).toContain('everything, files');
  expect(crossCheck({ servers, host, policy, hostSource: 'h', policySource: 'p' })).toEqual([]);
});
