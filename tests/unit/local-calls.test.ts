import type { PlannedCall } from '../../src/core/host-loop';
import { readOnlyCallsStayLocal } from '../../src/core/local-calls';
import type { Policy } from '../../src/shared/policy';
import type { UserContext } from '../../src/shared/user';

function call(server: string, tool: string, readOnly = false): PlannedCall {
  return {
    kind: 'call',
    call: { id: `${server}-${tool}`, name: `${server}__${tool}`, arguments: '{}' },
    tool: { name: `${server}__${tool}`, server, tool, ...(readOnly ? { readOnly: true as const } : {}) },
    arguments: {},
  };
}

const reject: PlannedCall = { kind: 'reject', call: { id: 'x', name: 'ghost__vanish', arguments: '{}' }, arguments: {}, reason: 'Unknown tool' };

const user: UserContext = { id: 'u1', role: 'clerk', tenant: 't1', scopes: [] };
const access = {
  user,
  policy: {
    roles: { clerk: { servers: { clock: { tools: '*' }, notes: { tools: '*' }, bank: { tools: '*' } } } },
    toolScopes: {},
    approval: { tools: ['bank/transfer'], timeoutMs: 1_000, approverRoles: [] },
  } satisfies Policy,
};

describe('readOnlyCallsStayLocal', () => {
  test('a step of read-only calls (and rejections) keeps them local', () => {
    expect(readOnlyCallsStayLocal([call('clock', 'now', true), call('clock', 'now', true), reject])).toBe(true);
    expect(readOnlyCallsStayLocal([], access)).toBe(true);
  });

  test('a regular call that goes out at once sends the read-only ones out as regular activities', () => {
    expect(readOnlyCallsStayLocal([call('clock', 'now', true), call('notes', 'add')])).toBe(false);
    expect(readOnlyCallsStayLocal([call('clock', 'now', true), call('notes', 'add')], access)).toBe(false);
  });

  test('a regular call that waits for approval or is denied does not go out now: the read-only ones stay local', () => {
    expect(readOnlyCallsStayLocal([call('clock', 'now', true), call('bank', 'transfer')], access)).toBe(true);
    expect(readOnlyCallsStayLocal([call('clock', 'now', true), call('admin', 'add_user')], access)).toBe(true);
  });
});
