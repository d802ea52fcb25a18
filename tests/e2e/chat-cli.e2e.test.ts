import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import path from 'node:path';
import { loadPolicyFile } from '../../src/config/policy';
import { DIST, ROOT, startSystem, type TestSystem } from '../helpers/system';

/**
 * `npm run chat` against the real system: a person typing into the CLI (stdin), reading what it prints
 * (stdout). Live text and tool calls, an approval answered inline, Ctrl-C cancelling the turn in
 * flight, and a session resumed by name.
 */
let sys: TestSystem;
let token: string;
const running: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  sys = await startSystem({ policy: { ...policy, approval: { tools: ['notes/add_note'], timeoutMs: 30_000, approverRoles: ['admin'] } } });
  token = await sys.token('admin');
}, 120_000);
afterAll(async () => {
  for (const c of running) if (c.exitCode === null) c.kill('SIGKILL');
  await sys?.stop();
});

interface Chat {
  child: ChildProcessWithoutNullStreams;
  output(): string;
  type(line: string): void;
  /** Waits until the output after `from` matches. */
  until(pattern: RegExp, from?: number, timeoutMs?: number): Promise<number>;
  exited: Promise<number | null>;
}

function chat(session: string): Chat {
  const child = spawn(process.execPath, [path.join(DIST, 'src/cli/chat.js'), '--api', sys.apiUrl, '--token', token, '--session', session], { cwd: ROOT });
  running.push(child);
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    child,
    output: () => out,
    type: (line) => child.stdin.write(`${line}\n`),
    exited,
    async until(pattern, from = 0, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const m = pattern.exec(out.slice(from));
        if (m) return from + m.index + m[0].length;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`chat output never matched ${String(pattern)}:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

test('a conversation: the answer, tool calls as they happen, an approval asked and given inline', async () => {
  const c = chat('cli-1');
  let at = await c.until(/you> /);
  c.type('hello');
  at = await c.until(/assistant> Hello! I am the demo model[^\n]*\n/, at);
  at = await c.until(/you> /, at);

  c.type('remember that the milk is low');
  at = await c.until(/\? notes__add_note \{"text":"the milk is low"\} needs approval\. Approve\? \[y\/N\] /, at);
  c.type('y');
  at = await c.until(/ {2}approved\n/, at);
  at = await c.until(/ {2}← notes__add_note ok\n/, at);
  at = await c.until(/assistant> Done\. The notes server said: [^\n]*milk is low/, at);
  await c.until(/you> /, at);
  c.child.stdin.end();
  expect(await c.exited).toBe(0);
});

test('Ctrl-C cancels the turn in flight (the turn ends cancelled), and the chat goes on', async () => {
  sys.model.setFaults([{ delayMs: 10_000, times: 1 }]);
  const c = chat('cli-2');
  let at = await c.until(/you> /);
  c.type('echo slow one');
  // The turn is running once the API has it: its session lists the message.
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${sys.apiUrl}/v1/sessions/cli-2/messages`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status === 200 && ((await res.json()) as { activeTurnId?: string }).activeTurnId) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  c.child.kill('SIGINT');
  at = await c.until(/\(cancelling…\)\n/, at);
  at = await c.until(/\(cancelled\)\n/, at);
  at = await c.until(/you> /, at);
  sys.model.setFaults([]);
  c.type('echo hi there');
  await c.until(/assistant> The everything server answered: [^\n]*hi there/, at);
  c.child.stdin.end();
  expect(await c.exited).toBe(0);
});

test('naming a session again resumes it with its last messages', async () => {
  const c = chat('cli-1');
  await c.until(/Resuming session cli-1 \(\d+ messages\)\./);
  await c.until(/you> remember that the milk is low\n/);
  c.child.stdin.end();
  expect(await c.exited).toBe(0);
});

test('queued behind a turn that waits for approval: the chat says so and offers to decide or cancel it', async () => {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  // Sent from elsewhere (another tab): it waits for a decision nobody has taken yet.
  const first = await fetch(`${sys.apiUrl}/v1/sessions/cli-3/messages`, { method: 'POST', headers, body: JSON.stringify({ text: 'remember that the bins go out on Monday' }) });
  expect(first.status).toBe(202);
  const { turnId } = (await first.json()) as { turnId: string };
  for (let i = 0; i < 200; i++) {
    const view = (await (await fetch(`${sys.apiUrl}/v1/turns/${turnId}`, { headers })).json()) as { status: string };
    if (view.status === 'awaiting_approval') break;
    await new Promise((r) => setTimeout(r, 50));
  }

  const c = chat('cli-3');
  let at = await c.until(/you> /);
  c.type('hello');
  at = await c.until(/\(queued behind an earlier message of this session\)\n/, at);
  at = await c.until(
    /\? the turn ahead waits for approval of notes__add_note \{"text":"the bins go out on Monday"\} \(denied at [^)]+ if nobody decides\)\. Approve, deny or cancel that turn\? \[y\/N\/c\] /,
    at,
  );
  c.type('c');
  at = await c.until(/ {2}cancelling the turn ahead\n/, at);
  await c.until(/assistant> Hello! I am the demo model[^\n]*\n/, at);
  c.child.stdin.end();
  expect(await c.exited).toBe(0);
  const ahead = (await (await fetch(`${sys.apiUrl}/v1/turns/${turnId}`, { headers })).json()) as { status: string };
  expect(ahead.status).toBe('cancelled');
});
