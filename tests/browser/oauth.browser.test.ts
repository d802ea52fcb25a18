import { readFileSync } from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import type { DemoRules } from '../../src/demo-model/rules';
import { startProtectedServer, type ProtectedServer } from '../../examples/servers/protected-server';
import { EXAMPLE_RULES, startSystem, type TestSystem } from '../helpers/system';

/**
 * OAuth from the console in a real headless Chromium: the Servers tab links to the authorization of
 * the host's listing; a chat turn whose tool needs the user's consent shows an "Authorize" link, the
 * consent page opens in a new tab, and once the user allowed, the turn completes in the console.
 * `CONSOLE_SCREENSHOTS=<dir>` saves the waiting turn as console-oauth.png.
 */
let sys: TestSystem;
let remote: ProtectedServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const shots = process.env.CONSOLE_SCREENSHOTS;

beforeAll(async () => {
  const executablePath = process.env.CHROMIUM_PATH;
  if (!executablePath) throw new Error('CHROMIUM_PATH is not set: run the suite with `npm test`, which finds or installs Chromium (scripts/ensure-chromium.sh)');
  remote = await startProtectedServer();
  const base = JSON.parse(readFileSync(EXAMPLE_RULES, 'utf8')) as DemoRules;
  const script = {
    name: 'private-note',
    match: '(?i)^save privately (.+)$',
    steps: [{ toolCalls: [{ name: 'private__add_private_note', arguments: { text: '{{match.1}}' } }] }, { text: 'Private: {{tool:private__add_private_note}}' }],
  };
  sys = await startSystem({
    rules: { ...base, scripts: [script, ...(base.scripts ?? [])] },
    tokenSealKey: 'oauth-browser-seal-key-0123456789abcdef',
    extraServers: { private: { url: remote.mcpUrl, transport: 'streamable-http', auth: { type: 'oauth' } } },
  });
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  page = await context.newPage();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await sys?.stop();
  await remote?.close();
});

/** Clicks a link that opens the consent page in a new tab, consents as `user`, and checks the callback page. */
async function consentVia(link: ReturnType<Page['locator']>, user: string): Promise<void> {
  const [consentPage] = await Promise.all([context.waitForEvent('page'), link.click()]);
  await consentPage.waitForLoadState();
  await consentPage.fill('input[name="user"]', user);
  await consentPage.click('button:has-text("Allow")');
  await consentPage.waitForURL(/\/v1\/oauth\/callback\?/);
  await expect(consentPage.textContent('h1')).resolves.toBe('Authorized');
  await consentPage.close();
}

test("the Servers tab links to the authorization of the host's listing; after it the server's tools are listed", async () => {
  await page.goto(`${sys.apiUrl}/console/`);
  await page.fill('#token', await sys.token('admin'));
  await page.click('#sign-in');
  await page.click('#tab-servers');
  const row = page.locator('tr[data-server="private"]');
  await row.locator('text=needs authorization').waitFor();
  await consentVia(row.locator("a:has-text(\"Authorize the host's listing\")"), 'operator');
  await page.locator('tr[data-server="private"] .state-connected').waitFor({ timeout: 20_000 });
});

test("a turn waits for the user's consent, shown as a link; after consenting in the new tab the turn completes", async () => {
  await page.click('#tab-chat');
  await page.fill('#message', 'save privately the spare key is under the mat');
  await page.click('#send');
  const turn = page.locator('.turn').last();
  const link = turn.locator('[data-authorization="private"] a:has-text("Authorize private")');
  await link.waitFor({ timeout: 30_000 });
  if (shots) await page.screenshot({ path: path.join(shots, 'console-oauth.png'), fullPage: true });
  await consentVia(link, 'ada');
  await page.locator('.turn[data-status="completed"]').last().waitFor({ timeout: 30_000 });
  await expect(turn.locator('.answer').textContent()).resolves.toBe('Private: saved for ada');
  await expect(turn.locator('[data-authorization="private"]').textContent()).resolves.toContain('authorized');
});
