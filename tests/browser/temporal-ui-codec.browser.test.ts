import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { freePort, startTemporalDevServer } from '../../src/cli/processes';
import { startApiProcess } from '../helpers/api-process';
import { startOnFreshPorts, startSystem, temporalCli, type TestSystem } from '../helpers/system';

/**
 * Sealed histories in the real Temporal web UI (the dev server's, started with `--ui-codec-endpoint`
 * pointing at the API's codec server, as `npm start` does): an operator who signed in on the API
 * (the codec cookie) reads a turn's input decoded; without signing in the UI shows only ciphertext.
 * `CONSOLE_SCREENSHOTS=<dir>` saves the decoded view there.
 */
jest.setTimeout(180_000);

const SECRET = `kumquat-${randomBytes(4).toString('hex')}`;
let sys: TestSystem;
let browser: Browser;
let apiUrl: string;
let uiUrl: string;
let turnId: string;

beforeAll(async () => {
  const executablePath = process.env.CHROMIUM_PATH;
  if (!executablePath) throw new Error('CHROMIUM_PATH is not set: run the suite with `npm test`, which finds or installs Chromium (scripts/ensure-chromium.sh)');
  const keys = `k1:${randomBytes(32).toString('base64')}`;
  const apiPort = await freePort();
  sys = await startSystem({
    payloadKeys: keys,
    temporal: (dir) =>
      startOnFreshPorts(async (attempt) => {
        const uiPort = await freePort();
        const server = await startTemporalDevServer({
          cli: temporalCli(),
          dbFile: path.join(dir, `temporal-${attempt}.db`),
          port: await freePort(),
          uiPort,
          uiCodecEndpoint: `http://127.0.0.1:${apiPort}/v1/codec`,
        });
        uiUrl = `http://127.0.0.1:${uiPort}`;
        return server;
      }),
  });
  // The API process as deployed: the same keys, the UI's origin allowed on the codec routes.
  ({ url: apiUrl } = await startApiProcess(sys, { API_PORT: String(apiPort), PAYLOAD_KEYS: keys, TEMPORAL_UI_URL: uiUrl }));
  const token = await sys.token('admin');
  const posted = await fetch(`${apiUrl}/v1/sessions/ui-codec/messages`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ text: `remember that the fruit is ${SECRET}` }),
  });
  expect(posted.status).toBe(202);
  turnId = ((await posted.json()) as { turnId: string }).turnId;
  await sys.client.workflow.getHandle(turnId).result();
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
});

afterAll(async () => {
  await browser?.close();
  await sys?.stop();
});

/**
 * A browser profile whose UI codec settings (kept in its local storage, as the UI's "Codec Server"
 * dialog saves them) override the server's with the same endpoint and "include cross-origin
 * credentials" on: the dev server's flag sets the endpoint only.
 */
async function uiPage(signedIn: boolean): Promise<{ page: Page; decodeStatus: number }> {
  const context = await browser.newContext();
  if (signedIn) {
    // As the console does at sign-in: the codec cookie for the API's origin.
    const session = await context.request.post(`${apiUrl}/v1/codec/session`, { headers: { authorization: `Bearer ${await sys.token('admin')}` } });
    expect(session.status()).toBeLessThan(300);
  }
  const page = await context.newPage();
  await page.goto(uiUrl);
  await page.evaluate((endpoint) => {
    localStorage.setItem('includeCredentials', 'true');
    localStorage.setItem('overrideRemoteCodecConfiguration', 'true');
    localStorage.setItem('endpoint', JSON.stringify(endpoint));
  }, `${apiUrl}/v1/codec`);
  const { runId } = await sys.client.workflow.getHandle(turnId).describe();
  const decoded = page.waitForResponse((r) => r.url().startsWith(`${apiUrl}/v1/codec/decode`), { timeout: 60_000 });
  await page.goto(`${uiUrl}/namespaces/default/workflows/${encodeURIComponent(turnId)}/${runId}/history`);
  return { page, decodeStatus: (await decoded).status() };
}

test('signed in, the UI shows the turn decoded through the codec server', async () => {
  const { page, decodeStatus } = await uiPage(true);
  expect(decodeStatus).toBe(200);
  await page.getByText(SECRET).first().waitFor({ timeout: 60_000 });
  const shots = process.env.CONSOLE_SCREENSHOTS;
  if (shots) await page.screenshot({ path: path.join(shots, 'temporal-ui-decoded.png') });
});

test('not signed in, it shows no user text', async () => {
  const { page, decodeStatus } = await uiPage(false);
  // The UI asked the codec server, which refused it (no cookie)...
  expect(decodeStatus).toBe(401);
  // ...and shows the history without the user's text.
  await page.getByText(turnId).first().waitFor({ timeout: 60_000 });
  expect(await page.content()).not.toContain(SECRET);
});
