import { readFileSync } from 'node:fs';
import path from 'node:path';
import { SignJWT } from 'jose';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { verifyAuditLog } from '../../src/audit';
import { bearer, getJson, postJson, postMessage, readSse, waitFor, type SseEvent } from '../helpers/http';
import { startSchoolSystem, type SchoolSystem } from '../helpers/school';
import { JWT_AUDIENCE, JWT_ISSUER, ROOT } from '../helpers/system';
import { loadPolicyFile } from '../../src/config/policy';
import type { Policy } from '../../src/shared/policy';

/**
 * Who may do what, on the real system: JWTs at the edge, the policy filtering what the model sees
 * and re-checked in the workflow, user context reaching the servers, tenant isolation, durable
 * approvals, a verifiable audit trail, and no secret in histories or logs.
 */
jest.setTimeout(120_000);

const LLM_KEY = 'sk-test-known-llm-key-0123456789abcdef';
const VAULT_KEY = 'vault-known-secret-header-value-42';
const SEAL_KEY = 'seal-key-known-secret-0123456789abcdef-xyz';
/**
 * Longer than any test here runs, so no decision can come too late however slow the machine: the
 * restart test alone spends 10 s with the turn's task on the killed worker's sticky queue, plus the
 * new worker's start. The timeout test sets EXPIRING_APPROVAL_MS for its own turn and waits for it.
 */
const APPROVAL_MS = 600_000;
const EXPIRING_APPROVAL_MS = 2_000;
// Adding users needs a human's approval in this deployment.
const APPROVAL = { tools: ['admin/add_user'], timeoutMs: APPROVAL_MS, approverRoles: ['admin'] };
let sys: SchoolSystem;
let withApproval: Policy;
let admin: Record<string, string>;
let teacher: Record<string, string>;
let student: Record<string, string>;
let outsider: Record<string, string>;

beforeAll(async () => {
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  withApproval = { ...policy, approval: APPROVAL };
  sys = await startSchoolSystem({
    policy: withApproval,
    workerEnv: { LLM_API_KEY: LLM_KEY, VAULT_KEY, LOG_LEVEL: 'debug' },
    tokenSealKey: SEAL_KEY,
    captureApiLog: true,
    // Never reachable; its header carries a secret that must not leak anywhere.
    extraServers: { vault: { url: 'http://127.0.0.1:9/mcp', headers: { 'X-Api-Key': '${env:VAULT_KEY}' } } },
    host: { timeouts: { llmStartToCloseMs: 30_000, llmHeartbeatMs: 3_000, toolStartToCloseMs: 60_000, toolHeartbeatMs: 3_000 } },
  });
  admin = bearer(await sys.token('admin'));
  teacher = bearer(await sys.token('teacher'));
  student = bearer(await sys.token('student'));
  outsider = bearer(await sys.token({ sub: 'u-olivia', role: 'admin', tenant: 'other', scopes: ['admin.super'] }));
  await serversConnected(sys.worker);
}, 180_000);
afterAll(async () => {
  await sys?.stop();
});

/**
 * Waits until this worker has reported its servers connected (all but the unreachable vault): a worker
 * says WORKER_READY before it has connected them, and on a loaded machine a turn started at once found
 * no tools (caught under scripts/cpu-hog.mjs). A deadline for a busy machine, not a timing.
 */
async function serversConnected(worker: { pid: number }): Promise<void> {
  await waitFor(async () => {
    const health = await getJson(`${sys.apiUrl}/healthz`);
    const mine = (health.body.workers as Array<{ worker: string; phase?: string; servers: Array<{ server: string; state: string }> }> | undefined)?.find((w) => w.worker.startsWith(`${worker.pid}@`));
    return mine?.phase === 'ready' && mine.servers.filter((x) => x.server !== 'vault').every((x) => x.state === 'connected') ? true : undefined;
  }, 90_000, 250);
}

async function until(turnId: string, headers: Record<string, string>, pred: (e: SseEvent) => boolean) {
  return await readSse(`${sys.apiUrl}/v1/turns/${turnId}/events`, { headers, stopAfter: pred, timeoutMs: 60_000 });
}

describe('tokens', () => {
  const sign = (claims: Record<string, unknown>, opts: { secret?: string; alg?: string; exp?: number; nbf?: number; iss?: string; aud?: string } = {}) => {
    const now = Math.floor(Date.now() / 1000);
    let jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: opts.alg ?? 'HS256' })
      .setIssuer(opts.iss ?? JWT_ISSUER)
      .setAudience(opts.aud ?? JWT_AUDIENCE)
      .setExpirationTime(opts.exp ?? now + 600);
    if (opts.nbf) jwt = jwt.setNotBefore(opts.nbf);
    return jwt.sign(new TextEncoder().encode(opts.secret ?? sys.jwtSecret));
  };
  const good = { sub: 'u-ada', role: 'admin', tenant_id: 'demo', scopes: ['admin.super'] };
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

  test.each([
    ['no header', 'missing_token', async () => ({}) as Record<string, string>],
    ['not Bearer', 'malformed_authorization', async () => ({ authorization: 'Basic abc' })],
    ['garbage', 'malformed_token', async () => bearer('not.a.jwt')],
    ['alg none', 'unsupported_alg', async () => bearer(`${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...good, iss: JWT_ISSUER, aud: JWT_AUDIENCE, exp: 9e9 })}.`)],
    ['forged signature', 'bad_signature', async () => bearer(await sign(good, { secret: 'x'.repeat(40) }))],
    ['expired', 'token_expired', async () => bearer(await sign(good, { exp: Math.floor(Date.now() / 1000) - 600 }))],
    ['not yet valid', 'token_not_yet_valid', async () => bearer(await sign(good, { nbf: Math.floor(Date.now() / 1000) + 600 }))],
    ['wrong issuer', 'wrong_issuer', async () => bearer(await sign(good, { iss: 'someone-else' }))],
    ['wrong audience', 'wrong_audience', async () => bearer(await sign(good, { aud: 'another-api' }))],
    ['missing role', 'invalid_claims', async () => bearer(await sign({ sub: 'u-ada', tenant_id: 'demo' }))],
  ])('%s → 401 %s', async (_name, code, headers) => {
    // An empty authorization overrides the helpers' default token.
    const res = await postJson(`${sys.apiUrl}/v1/sessions/s/messages`, { text: 'hello' }, Object.assign({ authorization: '' }, await headers()));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe(code);
    expect(JSON.stringify(res.body)).not.toContain(sys.jwtSecret);
  });
});

test('role escalation through an LLM-requested tool: the student never sees it, asking anyway is denied and audited', async () => {
  const post = await postMessage(sys.apiUrl, 'escalate', 'Add an admin named Mallory Root', student);
  const events = await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { headers: student, timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const turn = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`, student)).body;
  expect(turn.toolCalls).toEqual([expect.objectContaining({ name: 'admin__add_user', state: 'failed', result: expect.stringMatching(/^Denied by policy: role "student" may not use admin\/add_user/) })]);
  expect(sys.store().users.some((u) => u.name === 'Mallory Root')).toBe(false);
  // The model was never offered the tool.
  const req = sys.model.requests().filter((r) => r.path.endsWith('/chat/completions')).find((r) => JSON.stringify(r.body).includes('Mallory Root'));
  const offered = ((req?.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map((t) => t.function.name);
  expect(offered.length).toBeGreaterThan(0);
  expect(offered.some((n) => n.startsWith('admin__') || n.startsWith('payments__'))).toBe(false);
  const audit = readFileSync(sys.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(audit).toContainEqual(expect.objectContaining({ kind: 'denial', tool: 'add_user', outcome: 'denied', actor: { id: 'u-bob', role: 'student', tenant: 'demo' } }));
});

test('tenant isolation: another tenant gets 404 for reads, streams and approvals', async () => {
  const post = await postMessage(sys.apiUrl, 'mine', 'How many students do we have?', admin);
  await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { headers: admin, timeoutMs: 60_000 });
  const id = post.body.turnId;
  expect((await getJson(`${sys.apiUrl}/v1/turns/${id}`, admin)).status).toBe(200);
  for (const who of [outsider, teacher]) {
    expect((await getJson(`${sys.apiUrl}/v1/turns/${id}`, who)).status).toBe(404);
    const stream = await fetch(`${sys.apiUrl}/v1/turns/${id}/events`, { headers: who });
    expect(stream.status).toBe(404);
    await stream.body?.cancel();
  }
  expect((await postJson(`${sys.apiUrl}/v1/turns/${id}/approvals/call_x`, { approve: true }, outsider)).status).toBe(404);
  // The outsider's servers see their own tenant only: their "students" are not demo's.
  const theirs = await postMessage(sys.apiUrl, 'theirs', 'How many students do we have?', outsider);
  const events = await readSse(`${sys.apiUrl}${theirs.body.eventsUrl as string}`, { headers: outsider, timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  const theirText = (await getJson(`${sys.apiUrl}/v1/turns/${theirs.body.turnId}`, outsider)).body.text as string;
  const theirStudents = sys.store().users.filter((u) => u.tenantId === 'other' && u.role === 'student').length;
  const demoStudents = sys.store().users.filter((u) => u.tenantId === 'demo' && u.role === 'student').length;
  expect(theirStudents).not.toBe(demoStudents);
  expect(theirText).toContain(`We have ${theirStudents} students`);
});

test('durable approval: the turn waits, the wrong people cannot decide, the owner approves, one user is added', async () => {
  const post = await postMessage(sys.apiUrl, 'approve', 'Add a teacher named Ada Approved', admin);
  const seen = await until(post.body.turnId, admin, (e) => e.event === 'approval_required');
  const req = seen.find((e) => e.event === 'approval_required');
  expect(req?.data).toMatchObject({ name: 'admin__add_user', server: 'admin', tool: 'add_user', arguments: { name: 'Ada Approved', role: 'teacher' } });
  expect((await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`, admin)).body.status).toBe('awaiting_approval');
  const url = `${sys.apiUrl}/v1/turns/${post.body.turnId}/approvals/${req?.data.toolCallId as string}`;
  expect((await postJson(url, { approve: true }, teacher)).status).toBe(404);
  expect((await postJson(url, { approve: true }, outsider)).status).toBe(404);
  expect((await postJson(`${url}-nope`, { approve: true }, admin)).status).toBe(404);
  expect((await postJson(url, { approve: 'yes' }, admin)).status).toBe(400);
  const ok = await postJson(url, { approve: true }, admin);
  expect(ok.status).toBe(200);
  expect(ok.body.decision).toBe('approved');
  expect((await postJson(url, { approve: false }, admin)).status).toBe(409);
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { headers: admin, timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  expect(sys.store().users.filter((u) => u.name === 'Ada Approved')).toHaveLength(1);
});

test("approvals inbox: another admin of the tenant sees the waiting call, reads the turn and approves it; the teacher's inbox is empty", async () => {
  const owner = bearer(await sys.token({ sub: 'u-ann', role: 'admin', tenant: 'demo', scopes: ['admin.super'] }));
  const post = await postMessage(sys.apiUrl, 'inbox', 'Add a teacher named Ivy Inbox', owner);
  await until(post.body.turnId, owner, (e) => e.event === 'approval_required');
  const listed = await waitFor(async () => {
    const inbox = await getJson(`${sys.apiUrl}/v1/approvals`, admin);
    return inbox.body.approvals.find((a: { turnId: string }) => a.turnId === post.body.turnId);
  });
  expect(listed).toMatchObject({ owner: 'u-ann', name: 'admin__add_user', arguments: { name: 'Ivy Inbox', role: 'teacher' } });
  expect(Date.parse(listed.deadline) - Date.parse(listed.requestedAt)).toBe(APPROVAL_MS);
  expect((await getJson(`${sys.apiUrl}/v1/approvals`, teacher)).body.approvals).toEqual([]);
  const view = (await getJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}`, admin)).body;
  expect(view.toolCalls).toEqual([expect.objectContaining({ name: 'admin__add_user', state: 'awaiting_approval' })]);
  const ok = await postJson(`${sys.apiUrl}${listed.decideUrl as string}`, { approve: true }, admin);
  expect(ok.body.decision).toBe('approved');
  const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { headers: owner, timeoutMs: 60_000 });
  expect(events.at(-1)?.event).toBe('done');
  expect(sys.store().users.filter((u) => u.name === 'Ivy Inbox')).toHaveLength(1);
});

test('a rejected approval and an approval timeout both leave the action undone', async () => {
  const a = await postMessage(sys.apiUrl, 'approve', 'Add a teacher named Rex Rejected', admin);
  const seen = await until(a.body.turnId, admin, (e) => e.event === 'approval_required');
  const id = seen.find((e) => e.event === 'approval_required')?.data.toolCallId as string;
  expect((await postJson(`${sys.apiUrl}/v1/turns/${a.body.turnId}/approvals/${id}`, { approve: false }, admin)).body.decision).toBe('rejected');
  // A policy edit applies to the turns that start after it: this one expires soon, the others do not.
  sys.setPolicy({ ...withApproval, approval: { ...APPROVAL, timeoutMs: EXPIRING_APPROVAL_MS } });
  const b = await postMessage(sys.apiUrl, 'approve', 'Add a teacher named Tim Timeout', admin).finally(() => sys.setPolicy(withApproval));
  for (const t of [a, b]) {
    const events = await readSse(`${sys.apiUrl}/v1/turns/${t.body.turnId}/events`, { headers: admin, timeoutMs: 60_000 });
    expect(events.at(-1)?.event).toBe('done');
  }
  const bText = (await getJson(`${sys.apiUrl}/v1/turns/${b.body.turnId}`, admin)).body.text as string;
  expect(bText).toMatch(/did not approve this action in time/);
  expect(sys.store().users.some((u) => u.name === 'Rex Rejected' || u.name === 'Tim Timeout')).toBe(false);
});

test('an approval wait survives a worker restart', async () => {
  const post = await postMessage(sys.apiUrl, 'approve', 'Add a teacher named Wendy Waited', admin);
  const seen = await until(post.body.turnId, admin, (e) => e.event === 'approval_required');
  const id = seen.find((e) => e.event === 'approval_required')?.data.toolCallId as string;
  await sys.worker.kill();
  const replacement = await sys.startWorker();
  try {
    // The approved call runs on the replacement: once it has its servers.
    await serversConnected(replacement);
    const ok = await postJson(`${sys.apiUrl}/v1/turns/${post.body.turnId}/approvals/${id}`, { approve: true }, admin);
    expect(ok.status).toBe(200);
    const events = await readSse(`${sys.apiUrl}/v1/turns/${post.body.turnId}/events`, { headers: admin, timeoutMs: 90_000 });
    expect(events.at(-1)?.event).toBe('done');
    expect(sys.store().users.filter((u) => u.name === 'Wendy Waited')).toHaveLength(1);
  } finally {
    sys.worker = replacement;
  }
});

test('the audit trail verifies, records every decision and call with its attempt, and redacts personal data', async () => {
  const result = await verifyAuditLog(sys.auditFile);
  expect(result.ok).toBe(true);
  const entries = readFileSync(sys.auditFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const kinds = new Set(entries.map((e) => e.kind));
  for (const k of ['tool_call', 'tool_result', 'denial', 'approval_requested', 'approval_decision']) expect(kinds).toContain(k);
  const outcomes = entries.filter((e) => e.kind === 'approval_decision').map((e) => e.outcome);
  expect(outcomes).toEqual(expect.arrayContaining(['approved', 'rejected', 'timed_out']));
  const call = entries.find((e) => e.kind === 'tool_call');
  expect(call).toMatchObject({ workflowId: expect.stringMatching(/^turn-/), activityId: expect.any(String), attempt: 1, argsDigest: expect.stringMatching(/^[0-9a-f]{64}$/) });
  // Teacher's homework mail went to students: their addresses are not in the audit in clear.
  expect(readFileSync(sys.auditFile, 'utf8')).not.toMatch(/@school\.example/);
});

test('no secret appears in any workflow history, the worker or API log, or the audit trail', async () => {
  // A turn through the teacher path too, so comms/teacher calls are in the histories.
  const post = await postMessage(sys.apiUrl, 'secrets', 'Assign homework Secret essay to Math 201 due 2026-12-30', teacher);
  await readSse(`${sys.apiUrl}${post.body.eventsUrl as string}`, { headers: teacher, timeoutMs: 60_000 });
  // The users' tokens travel sealed (a seal key is configured): neither they nor the key may show.
  const tokenSignatures = [admin, teacher, student].map((h) => (h.authorization ?? '').split('.')[2] as string);
  const secrets = [LLM_KEY, VAULT_KEY, SEAL_KEY, sys.jwtSecret, ...tokenSignatures];
  expect(tokenSignatures.every((t) => t.length > 20)).toBe(true);
  const haystacks: string[] = [readFileSync(sys.auditFile, 'utf8'), sys.worker.output(), sys.apiLog()];
  expect(sys.apiLog()).toMatch(/incoming request/);
  for await (const wf of sys.client.workflow.list()) {
    haystacks.push(historyToJSON(await sys.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory()));
  }
  // Three logs and at least one history (more when the whole suite ran first).
  expect(haystacks.length).toBeGreaterThan(3);
  for (const text of haystacks) for (const secret of secrets) expect(text.includes(secret)).toBe(false);
});
