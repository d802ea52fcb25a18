import { readFileSync } from 'node:fs';
import path from 'node:path';
import { canApprove, decideTool, filterCatalog, policyForRole, requiredScopes } from '../../src/core/policy';
import type { CatalogTool } from '../../src/shared/tool-types';
import { parsePolicy, PolicyError, UserContextSchema } from '../../src/config/policy';
import type { Policy } from '../../src/shared/policy';
import type { UserContext } from '../../src/shared/user';

const user = (role: string, scopes: string[] = [], id = `u-${role}`): UserContext => ({ id, role, tenant: 'demo', scopes });

function tool(server: string, name: string): CatalogTool {
  return { name: `${server}__${name}`, server, tool: name, inputSchema: { type: 'object' } };
}

/** The parse error's message, or a failure if it parsed. */
function parseError(json: unknown): string {
  try {
    parsePolicy(json, 'test policy');
  } catch (err) {
    expect(err).toBeInstanceOf(PolicyError);
    return (err as Error).message;
  }
  throw new Error('expected the policy to be rejected');
}

const basic: Policy = parsePolicy(
  {
    roles: {
      admin: { servers: { '*': { tools: '*' } } },
      clerk: { servers: { payments: { tools: ['get_*', 'process_payment'] }, notes: { tools: '*' } } },
      auditor: { servers: { '*': { tools: ['list_*'] }, payments: { tools: ['refund_payment'] } } },
    },
    toolScopes: {
      'payments/process_payment': ['payments.charge'],
      'payments/refund_payment': ['payments.refund', 'payments.write'],
      'payments/*': ['payments.read'],
      '*/list_secrets': ['secrets.read'],
    },
    superScope: 'admin.super',
    approval: { tools: ['payments/refund_*'], timeoutMs: 60_000, approverRoles: ['admin'] },
  },
  'basic',
);

describe('decideTool', () => {
  it('denies by default: unknown role, unknown server, unlisted tool', () => {
    expect(decideTool(basic, user('guest', ['admin.super']), 'notes', 'list')).toEqual({
      allowed: false,
      reason: 'role "guest" has no tool access',
    });
    expect(decideTool(basic, user('clerk', ['payments.read']), 'admin', 'add_user')).toEqual({
      allowed: false,
      reason: 'role "clerk" may not use admin/add_user',
    });
    expect(decideTool(basic, user('clerk', ['payments.read', 'payments.refund', 'payments.write']), 'payments', 'refund_payment')).toEqual({
      allowed: false,
      reason: 'role "clerk" may not use payments/refund_payment',
    });
    const empty = parsePolicy({ roles: {} });
    expect(decideTool(empty, user('admin', ['admin.super']), 'notes', 'list').allowed).toBe(false);
  });

  it('does not treat prototype property names as roles or servers', () => {
    expect(decideTool(basic, user('constructor'), 'notes', 'list').allowed).toBe(false);
    expect(decideTool(basic, user('__proto__'), 'notes', 'list').allowed).toBe(false);
    expect(decideTool(basic, user('clerk'), 'constructor', 'x').allowed).toBe(false);
  });

  it('supports "*" servers, "*" tool lists and trailing-* tool prefixes', () => {
    expect(decideTool(basic, user('admin', ['admin.super']), 'anything', 'at_all')).toEqual({ allowed: true, needsApproval: false });
    expect(decideTool(basic, user('clerk'), 'notes', 'add_note')).toEqual({ allowed: true, needsApproval: false });
    expect(decideTool(basic, user('clerk', ['payments.read']), 'payments', 'get_receipt')).toEqual({ allowed: true, needsApproval: false });
    expect(decideTool(basic, user('clerk', ['payments.read']), 'payments', 'getx').allowed).toBe(false);
    // "*" server entry and a specific server entry both count.
    expect(decideTool(basic, user('auditor'), 'comms', 'list_outbox').allowed).toBe(true);
    expect(decideTool(basic, user('auditor'), 'comms', 'send_bulk').allowed).toBe(false);
  });

  it('requires ALL scopes of ALL matching toolScopes entries', () => {
    expect(requiredScopes(basic, 'payments', 'refund_payment')).toEqual(['payments.refund', 'payments.write', 'payments.read']);
    expect(requiredScopes(basic, 'notes', 'list_notes')).toEqual([]);
    expect(requiredScopes(basic, 'admin', 'list_secrets')).toEqual(['secrets.read']);

    const auditor = (scopes: string[]) => decideTool(basic, user('auditor', scopes), 'payments', 'refund_payment');
    expect(auditor([])).toEqual({ allowed: false, reason: 'missing scopes payments.refund, payments.write, payments.read for payments/refund_payment' });
    expect(auditor(['payments.refund', 'payments.read'])).toEqual({
      allowed: false,
      reason: 'missing scope payments.write for payments/refund_payment',
    });
    expect(auditor(['payments.refund', 'payments.write', 'payments.read'])).toEqual({ allowed: true, needsApproval: true });

    expect(decideTool(basic, user('clerk', ['payments.charge']), 'payments', 'process_payment')).toEqual({
      allowed: false,
      reason: 'missing scope payments.read for payments/process_payment',
    });
    // A tool absent from toolScopes needs no scope.
    expect(decideTool(basic, user('clerk'), 'notes', 'anything').allowed).toBe(true);
  });

  it('superScope passes every scope check but never a role check', () => {
    expect(decideTool(basic, user('auditor', ['admin.super']), 'payments', 'refund_payment')).toEqual({ allowed: true, needsApproval: true });
    expect(decideTool(basic, user('clerk', ['admin.super']), 'payments', 'process_payment')).toEqual({ allowed: true, needsApproval: false });
    expect(decideTool(basic, user('clerk', ['admin.super']), 'admin', 'add_user').allowed).toBe(false);
    expect(decideTool(basic, user('clerk', ['admin.super']), 'payments', 'refund_payment').allowed).toBe(false);
  });

  it('without superScope in the policy, no scope is special', () => {
    const noSuper = parsePolicy({ roles: { admin: { servers: { '*': { tools: '*' } } } }, toolScopes: { 'a/b': ['x'] } });
    expect(decideTool(noSuper, user('admin', ['admin.super']), 'a', 'b')).toEqual({ allowed: false, reason: 'missing scope x for a/b' });
  });

  it('flags tools that need approval; without an approval section nothing does', () => {
    expect(decideTool(basic, user('admin', ['admin.super']), 'payments', 'refund_payment')).toEqual({ allowed: true, needsApproval: true });
    expect(decideTool(basic, user('admin', ['admin.super']), 'payments', 'refund_all')).toEqual({ allowed: true, needsApproval: true });
    expect(decideTool(basic, user('admin', ['admin.super']), 'payments', 'process_payment')).toEqual({ allowed: true, needsApproval: false });
    const noApproval = parsePolicy({ roles: { admin: { servers: { '*': { tools: '*' } } } } });
    expect(decideTool(noApproval, user('admin'), 'payments', 'refund_payment')).toEqual({ allowed: true, needsApproval: false });
  });
});

describe('filterCatalog', () => {
  it('keeps only the allowed tools, in order', () => {
    const tools = [
      tool('payments', 'get_receipt'),
      tool('admin', 'add_user'),
      tool('notes', 'add_note'),
      tool('payments', 'process_payment'),
      tool('payments', 'refund_payment'),
    ];
    expect(filterCatalog(basic, user('clerk', ['payments.read']), tools).map((t) => t.name)).toEqual(['payments__get_receipt', 'notes__add_note']);
    expect(filterCatalog(basic, user('clerk', ['payments.read', 'payments.charge']), tools).map((t) => t.name)).toEqual([
      'payments__get_receipt',
      'notes__add_note',
      'payments__process_payment',
    ]);
    expect(filterCatalog(basic, user('admin', ['admin.super']), tools)).toHaveLength(5);
    expect(filterCatalog(basic, user('guest', ['admin.super']), tools)).toEqual([]);
  });
});

describe('canApprove', () => {
  it('lets the owner and approver roles decide, nobody else', () => {
    expect(canApprove(basic, user('clerk', [], 'u-1'), 'u-1')).toBe(true);
    expect(canApprove(basic, user('admin', [], 'u-2'), 'u-1')).toBe(true);
    expect(canApprove(basic, user('clerk', [], 'u-2'), 'u-1')).toBe(false);
    // The super scope is about tool scopes, not approvals.
    expect(canApprove(basic, user('auditor', ['admin.super'], 'u-2'), 'u-1')).toBe(false);
    const noApproval = parsePolicy({ roles: {} });
    expect(canApprove(noApproval, user('admin', [], 'u-2'), 'u-1')).toBe(false);
    expect(canApprove(noApproval, user('admin', [], 'u-1'), 'u-1')).toBe(true);
  });
});

describe('parsePolicy', () => {
  it('applies defaults', () => {
    const p = parsePolicy({ roles: {}, approval: { tools: ['a/b'] } });
    expect(p.toolScopes).toEqual({});
    expect(p.superScope).toBeUndefined();
    expect(p.approval).toEqual({ tools: ['a/b'], timeoutMs: 300_000, approverRoles: [] });
  });

  it.each<[string, unknown, string]>([
    ['not an object', 'nope', '(root): a policy must be a JSON object'],
    ['missing roles', {}, 'roles: must be an object mapping role names to rules'],
    ['unknown top-level field', { roles: {}, role: {} }, 'role: unknown field'],
    ['a bad role name', { roles: { 'bad role': { servers: {} } } }, 'roles["bad role"]: invalid key: role names must match'],
    ['a reserved role name', { roles: { constructor: { servers: {} } } }, 'roles.constructor: invalid key: is a reserved name'],
    ['a role without servers', { roles: { admin: {} } }, 'roles.admin.servers: must be an object mapping server names'],
    ['an unknown role field', { roles: { admin: { servers: {}, tools: '*' } } }, 'roles.admin.tools: unknown field'],
    ['a bad tools value', { roles: { admin: { servers: { notes: { tools: 'all' } } } } }, 'roles.admin.servers.notes.tools: must be "*" or an array of tool names'],
    ['a misplaced wildcard', { roles: { admin: { servers: { notes: { tools: ['a*b'] } } } } }, 'roles.admin.servers.notes.tools[0]: must be a tool name'],
    ['a bad server key', { roles: { admin: { servers: { 'no tes': { tools: '*' } } } } }, 'roles.admin.servers["no tes"]: invalid key: must be a server name'],
    ['a toolScopes key without a slash', { roles: {}, toolScopes: { process_payment: ['x'] } }, 'toolScopes.process_payment: invalid key: must be "<server>/<tool>"'],
    ['a scope with a space', { roles: {}, toolScopes: { 'a/b': ['x y'] } }, 'toolScopes["a/b"][0]: must be 1-128 printable ASCII'],
    ['scopes not an array', { roles: {}, toolScopes: { 'a/b': 'x' } }, 'toolScopes["a/b"]: must be an array of scopes'],
    ['a bad superScope', { roles: {}, superScope: 7 }, 'superScope: must be a string'],
    ['a bad approval tool', { roles: {}, approval: { tools: ['refund'] } }, 'approval.tools[0]: must be "<server>/<tool>"'],
    ['a tiny timeout', { roles: {}, approval: { timeoutMs: 5 } }, 'approval.timeoutMs: must be at least 1000'],
    ['a fractional timeout', { roles: {}, approval: { timeoutMs: 1500.5 } }, 'approval.timeoutMs: must be an integer'],
    ['a bad approver role', { roles: {}, approval: { approverRoles: ['a b'] } }, 'approval.approverRoles[0]: role names must match'],
    ['an unknown approval field', { roles: {}, approval: { approvers: [] } }, 'approval.approvers: unknown field'],
    ['a non-boolean sampling approval', { roles: {}, sampling: { servers: ['*'], approval: 'yes' } }, 'sampling.approval: must be true or false'],
    ['a bad elicitation role', { roles: {}, elicitation: { servers: ['*'], roles: ['a b'] } }, 'elicitation.roles[0]: role names must match'],
  ])('rejects %s, naming the field', (_name, json, expected) => {
    const message = parseError(json);
    expect(message).toContain('test policy is invalid: ');
    expect(message).toContain(expected);
  });

  it('keeps the sampling approval switch and the roles a server may ask', () => {
    const p = parsePolicy({ roles: {}, sampling: { servers: ['everything'], approval: true }, elicitation: { servers: ['*'], roles: ['teacher'] } });
    expect(p.sampling).toEqual({ servers: ['everything'], maxTokensPerRequest: 1_000, maxTokensPerTurn: 10_000, approval: true });
    expect(p.elicitation).toEqual({ servers: ['*'], roles: ['teacher'] });
  });

  it('reports every problem at once', () => {
    const message = parseError({ roles: { admin: { servers: { notes: { tools: 3 } } } }, superScope: '', extra: 1 });
    expect(message).toContain('roles.admin.servers.notes.tools');
    expect(message).toContain('superScope');
    expect(message).toContain('extra: unknown field');
  });
});

describe('UserContextSchema', () => {
  it('accepts a plain user and rejects bad roles and tenants', () => {
    expect(UserContextSchema.parse(user('teacher', ['a.b']))).toEqual(user('teacher', ['a.b']));
    expect(UserContextSchema.safeParse({ ...user('teacher'), role: 'a b' }).success).toBe(false);
    expect(UserContextSchema.safeParse({ ...user('teacher'), tenant: '' }).success).toBe(false);
    expect(UserContextSchema.safeParse({ ...user('teacher'), scopes: 'a' }).success).toBe(false);
  });
});

describe('examples/policy.json', () => {
  const file = path.join(__dirname, '../../examples/policy.json');
  const policy = parsePolicy(JSON.parse(readFileSync(file, 'utf8')) as unknown, file);
  // The demo users, with the scopes `mint-token` gives them.
  const ada = { id: 'u-ada', role: 'admin', tenant: 'demo', scopes: ['admin.super'] };
  const tom = { id: 'u-tom', role: 'teacher', tenant: 'demo', scopes: ['teacher.homework', 'teacher.attendance', 'comms.send'] };
  const bob = { id: 'u-bob', role: 'student', tenant: 'demo', scopes: ['student.read', 'student.submit'] };

  const school: Record<string, string[]> = {
    admin: ['add_user', 'find_user', 'create_class', 'enrol_student', 'get_invoice', 'issue_invoice', 'record_payment'],
    payments: ['process_payment', 'refund_payment'],
    comms: ['send_email', 'send_bulk'],
    student: ['view_grades', 'submit_homework', 'ask_tutor'],
    teacher: ['assign_homework', 'mark_attendance', 'list_students'],
    notes: ['add_note', 'list_notes'],
    everything: ['echo', 'add'],
  };
  const catalog = Object.entries(school).flatMap(([server, tools]) => tools.map((t) => tool(server, t)));
  const allowed = (u: UserContext) => filterCatalog(policy, u, catalog).map((t) => `${t.server}/${t.tool}`);

  it('lets the admin use every tool, with approval only for refunds', () => {
    expect(allowed(ada)).toHaveLength(catalog.length);
    expect(decideTool(policy, ada, 'payments', 'process_payment')).toEqual({ allowed: true, needsApproval: false });
    expect(decideTool(policy, ada, 'payments', 'refund_payment')).toEqual({ allowed: true, needsApproval: true });
    expect(decideTool(policy, ada, 'admin', 'add_user')).toEqual({ allowed: true, needsApproval: false });
    // Without admin.super the admin role still needs the tool scopes.
    expect(decideTool(policy, { ...ada, scopes: [] }, 'payments', 'process_payment')).toEqual({
      allowed: false,
      reason: 'missing scope payments.charge for payments/process_payment',
    });
    expect(decideTool(policy, { ...ada, scopes: [] }, 'admin', 'add_user')).toEqual({
      allowed: false,
      reason: 'missing scope admin.users for admin/add_user',
    });
  });

  it('gives the teacher their own tools, messaging, user lookup and grades', () => {
    expect(allowed(tom).sort()).toEqual(
      [
        'teacher/assign_homework',
        'teacher/mark_attendance',
        'teacher/list_students',
        'comms/send_email',
        'comms/send_bulk',
        'admin/find_user',
        'student/view_grades',
        'notes/add_note',
        'notes/list_notes',
        'everything/echo',
        'everything/add',
      ].sort(),
    );
    expect(decideTool(policy, tom, 'admin', 'add_user')).toEqual({ allowed: false, reason: 'role "teacher" may not use admin/add_user' });
    expect(decideTool(policy, tom, 'payments', 'process_payment')).toEqual({
      allowed: false,
      reason: 'role "teacher" may not use payments/process_payment',
    });
    expect(decideTool(policy, { ...tom, scopes: ['teacher.homework'] }, 'comms', 'send_bulk')).toEqual({
      allowed: false,
      reason: 'missing scope comms.send for comms/send_bulk',
    });
    expect(decideTool(policy, { ...tom, scopes: [] }, 'teacher', 'assign_homework').allowed).toBe(false);
  });

  it('confines the student to the student server, notes and everything', () => {
    expect(allowed(bob).sort()).toEqual(
      ['student/view_grades', 'student/submit_homework', 'student/ask_tutor', 'notes/add_note', 'notes/list_notes', 'everything/echo', 'everything/add'].sort(),
    );
    expect(decideTool(policy, bob, 'admin', 'get_invoice')).toEqual({ allowed: false, reason: 'role "student" may not use admin/get_invoice' });
    expect(decideTool(policy, bob, 'admin', 'add_user')).toEqual({ allowed: false, reason: 'role "student" may not use admin/add_user' });
    expect(decideTool(policy, { ...bob, scopes: ['student.read'] }, 'student', 'submit_homework')).toEqual({
      allowed: false,
      reason: 'missing scope student.submit for student/submit_homework',
    });
  });

  it('lets the owner or an admin approve, not another teacher', () => {
    expect(canApprove(policy, tom, 'u-tom')).toBe(true);
    expect(canApprove(policy, ada, 'u-tom')).toBe(true);
    expect(canApprove(policy, { ...tom, id: 'u-olivia' }, 'u-tom')).toBe(false);
    expect(policy.approval).toEqual({ tools: ['payments/refund_payment'], timeoutMs: 300_000, approverRoles: ['admin'] });
  });
});

describe('policyForRole', () => {
  const example = parsePolicy(JSON.parse(readFileSync(path.resolve(__dirname, '../../examples/policy.json'), 'utf8')), 'examples/policy.json');
  const refs = ['admin/add_user', 'admin/find_user', 'payments/process_payment', 'payments/refund_payment', 'payments/get_invoice', 'notes/add_note', 'teacher/assign_homework', 'comms/send_bulk', 'student/view_grades', 'everything/echo', 'secret/list_secrets', 'x/y'];
  const scopeSets = [[], ['admin.super'], ['payments.charge', 'payments.read'], ['payments.refund', 'payments.write', 'payments.read'], ['comms.send', 'teacher.homework']];

  test.each([
    ['basic', basic],
    ['examples/policy.json', example],
  ])('decides every call of a role exactly as the whole %s policy does, and keeps no other role', (_name, policy) => {
    for (const role of [...Object.keys(policy.roles), 'nobody', '__proto__', 'constructor']) {
      const slice = policyForRole(policy, role);
      expect(Object.keys(slice.roles)).toEqual(Object.hasOwn(policy.roles, role) ? [role] : []);
      for (const scopes of scopeSets) {
        const user: UserContext = { id: 'u', role, tenant: 't', scopes };
        for (const ref of refs) {
          const [server = '', tool = ''] = ref.split('/');
          expect([role, scopes, ref, decideTool(slice, user, server, tool)]).toEqual([role, scopes, ref, decideTool(policy, user, server, tool)]);
        }
        expect(canApprove(slice, { ...user, id: 'approver' }, 'owner')).toBe(canApprove(policy, { ...user, id: 'approver' }, 'owner'));
      }
    }
  });
});
