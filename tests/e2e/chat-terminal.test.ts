import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { DIST, ROOT } from '../helpers/system';

/**
 * `npm run chat` in a real terminal (a pseudo-terminal, tests/helpers/pty-bridge.py): what the user
 * types is echoed and stays on its line, and the turn's output starts below it. Against a stand-in API
 * that answers one message with a tool call and a text, so only the terminal handling is under test.
 */
let api: Server;
let apiUrl: string;
const posts: Array<{ url: string; key: string | string[] | undefined }> = [];

beforeAll(async () => {
  api = createServer((req, res) => {
    const url = req.url ?? '';
    if (req.method === 'GET' && url.endsWith('/messages')) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
    if (req.method === 'POST' && url.endsWith('/messages')) {
      posts.push({ url, key: req.headers['idempotency-key'] });
      // Session resend-1: the first POST is answered 503 (Temporal took the start, its answer was lost).
      if (url.includes('/resend-1/') && posts.filter((p) => p.url === url).length === 1) {
        return void res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'unavailable', message: 'try again shortly' } }));
      }
      return void res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ turnId: 'turn-1', eventsUrl: '/v1/turns/turn-1/events' }));
    }
    if (url.startsWith('/v1/turns/turn-1/events')) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const events: Array<[string, unknown]> = [
        ['status', { phase: 'calling_llm', step: 1 }],
        ['tool_call_started', { name: 'notes__add_note', arguments: { text: 'x' } }],
        ['tool_call_finished', { name: 'notes__add_note', isError: false }],
        ['text', { text: 'Noted.' }],
        ['done', { status: 'completed' }],
      ];
      events.forEach(([event, data], i) => res.write(`id: ${i + 1}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
      return void res.end();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => api?.close(resolve));
});

/**
 * The screen a terminal shows for `raw`: enough of one for readline's output (CR, LF, cursor to a
 * column, erase to the end of the screen) and plain text, which overwrites what is under the cursor.
 */
function screen(raw: string): string[] {
  const rows: string[] = [''];
  let row = 0;
  let col = 0;
  const put = (ch: string) => {
    const line = (rows[row] ?? '').padEnd(col, ' ');
    rows[row] = line.slice(0, col) + ch + line.slice(col + 1);
    col += 1;
  };
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i] as string;
    const esc = ch === '\x1b' ? /^\x1b\[(\d*)([A-Za-z])/.exec(raw.slice(i)) : null;
    if (esc) {
      const n = esc[1] ? Number(esc[1]) : 1;
      if (esc[2] === 'G') col = n - 1;
      else if (esc[2] === 'J') {
        rows[row] = (rows[row] ?? '').slice(0, col);
        rows.splice(row + 1);
      } else if (esc[2] === 'K') rows[row] = (rows[row] ?? '').slice(0, col);
      i += esc[0].length - 1;
    } else if (ch === '\r') col = 0;
    else if (ch === '\n') {
      row += 1;
      rows[row] ??= '';
    } else put(ch);
  }
  return rows.map((r) => r.trimEnd());
}

test('typed text stays on its line and the answer starts below it', async () => {
  const child = spawn('python3', [path.join(ROOT, 'tests/helpers/pty-bridge.py'), process.execPath, path.join(DIST, 'src/cli/chat.js'), '--api', apiUrl, '--token', 't', '--session', 'tty-1'], { cwd: ROOT });
  let raw = '';
  child.stdout.on('data', (d: Buffer) => (raw += d.toString()));
  child.stderr.on('data', (d: Buffer) => (raw += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const until = async (pattern: RegExp, from = 0): Promise<number> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const m = pattern.exec(raw.slice(from));
      if (m) return from + m.index + m[0].length;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the terminal never showed ${String(pattern)}:\n${JSON.stringify(raw)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  try {
    let at = await until(/you> /);
    // Keystrokes, as a person types them: each one is echoed by the chat.
    for (const key of 'add a note') {
      child.stdin.write(key);
      at = await until(new RegExp(key === ' ' ? ' ' : key), at);
    }
    child.stdin.write('\r');
    at = await until(/assistant> Noted\./, at);
    await until(/you> /, at);
    child.stdin.write('\x04');
    expect(await exited).toBe(0);
    const shown = screen(raw).filter((line) => line !== '');
    expect(shown.slice(1)).toEqual(['you> add a note', '  → notes__add_note {"text":"x"}', '  ← notes__add_note ok', 'assistant> Noted.', 'you>']);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});

test('a message answered 503 is sent again under the same Idempotency-Key, and its turn followed', async () => {
  const child = spawn(process.execPath, [path.join(DIST, 'src/cli/chat.js'), '--api', apiUrl, '--token', 't', '--session', 'resend-1'], { cwd: ROOT });
  let raw = '';
  child.stdout.on('data', (d: Buffer) => (raw += d.toString()));
  child.stderr.on('data', (d: Buffer) => (raw += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    child.stdin.write('add a note\n');
    const deadline = Date.now() + 60_000;
    while (!raw.includes('assistant> Noted.')) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no answer:\n${raw}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    child.stdin.end();
    expect(await exited).toBe(0);
    const mine = posts.filter((p) => p.url.includes('/resend-1/'));
    expect(mine).toHaveLength(2);
    expect(typeof mine[0]?.key).toBe('string');
    expect(mine[1]?.key).toBe(mine[0]?.key);
    expect(raw).toContain('sending again, the same message under the same key');
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
