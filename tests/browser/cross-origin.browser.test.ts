import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { freePort } from '../../src/cli/processes';
import { loadPolicyFile } from '../../src/config/policy';
import { ROOT, startSystem, type TestSystem } from '../helpers/system';

/**
 * A frontend served from another origin (another port), in a real Chromium: it posts a message, follows
 * the turn over SSE (EventSource, token in the query), approves the waiting call, and chats over the
 * WebSocket. The API allows that origin in CORS_ORIGINS; the browser enforces the rest.
 */
let sys: TestSystem;
let browser: Browser;
let site: Server;
let origin: string;

/** The frontend: plain browser APIs, as any app would use them. Reports what happened in window.result. */
const PAGE = `<!doctype html><meta charset="utf-8"><script>
async function run(api, token) {
  const log = [];
  const post = await fetch(api + '/v1/sessions/xo/messages', {
    method: 'POST', headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'remember that the tea is out' }),
  });
  const accepted = await post.json();
  log.push('post ' + post.status);
  await new Promise((resolve) => {
    const es = new EventSource(api + accepted.eventsUrl + '?access_token=' + encodeURIComponent(token));
    es.addEventListener('approval_required', async (e) => {
      const d = JSON.parse(e.data);
      const r = await fetch(api + '/v1/turns/' + accepted.turnId + '/approvals/' + d.toolCallId, {
        method: 'POST', headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' }, body: JSON.stringify({ approve: true }),
      });
      log.push('approved ' + r.status);
    });
    es.addEventListener('text_delta', () => { if (!log.includes('live text')) log.push('live text'); });
    es.addEventListener('done', () => { log.push('done'); es.close(); resolve(); });
    es.addEventListener('error', () => { if (es.readyState === EventSource.CLOSED) resolve(); });
  });
  await new Promise((resolve) => {
    const ws = new WebSocket(api.replace('http', 'ws') + '/ws?sessionId=xo-ws&access_token=' + encodeURIComponent(token));
    ws.onopen = () => ws.send(JSON.stringify({ type: 'message', payload: { text: 'echo over the socket' } }));
    ws.onmessage = (m) => {
      const f = JSON.parse(m.data);
      if (f.type === 'text') log.push('ws text: ' + f.payload.content);
      if (f.type === 'status' && f.payload.state === 'complete' && f.payload.status) { ws.close(); resolve(); }
    };
    ws.onerror = () => { log.push('ws error'); resolve(); };
  });
  return log;
}
</script>`;

beforeAll(async () => {
  const executablePath = process.env.CHROMIUM_PATH;
  if (!executablePath) throw new Error('CHROMIUM_PATH is not set: run the suite with `npm test`, which finds or installs Chromium (scripts/ensure-chromium.sh)');
  const port = await freePort();
  origin = `http://localhost:${port}`;
  site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE));
  await new Promise<void>((resolve) => site.listen(port, '127.0.0.1', resolve));
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  sys = await startSystem({
    corsOrigins: [origin],
    policy: { ...policy, approval: { tools: ['notes/add_note'], timeoutMs: 60_000, approverRoles: ['admin'] } },
  });
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await sys?.stop();
  site?.close();
});

test('a page on another origin posts, streams over SSE, approves, and chats over the WebSocket', async () => {
  const page = await browser.newPage();
  await page.goto(`${origin}/`);
  const token = await sys.token('admin');
  const log = (await page.evaluate(`run(${JSON.stringify(sys.apiUrl)}, ${JSON.stringify(token)})`)) as string[];
  // Live text may or may not arrive before the answer (it is best effort); everything else, in order.
  expect(log.filter((l) => l !== 'live text')).toEqual(['post 202', 'approved 200', 'done', expect.stringContaining('ws text: The everything server answered')]);
  await page.close();
});

test('a page on an origin the API does not allow cannot read its answers', async () => {
  const other = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><p>other</p>'));
  const port = await freePort();
  await new Promise<void>((resolve) => other.listen(port, '127.0.0.1', resolve));
  try {
    const page = await browser.newPage();
    await page.goto(`http://localhost:${port}/`);
    const outcome = await page.evaluate(`fetch(${JSON.stringify(`${sys.apiUrl}/v1/tools`)}, { headers: { authorization: 'Bearer x' } }).then(() => 'read', (e) => 'blocked: ' + e.name)`);
    expect(outcome).toBe('blocked: TypeError');
    await page.close();
  } finally {
    other.close();
  }
});
