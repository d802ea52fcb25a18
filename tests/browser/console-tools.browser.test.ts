import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { loadPolicyFile } from '../../src/config/policy';
import { EVERYTHING_SERVER, NOTES_SERVER, ROOT, startSystem, type TestSystem } from '../helpers/system';
import { type ApplyingServer, startApplyingServer } from '../helpers/applying-server';

/**
 * The console's tools page, empty chat, API docs and debug view in a real headless Chromium against
 * the real system: tools searchable and grouped by server with badges from the policy and the
 * servers' annotations, their schemas folded; an empty chat offering what the demo model answers,
 * one click sending it; /docs signed in with the console's token; a turn's MCP messages redacted as
 * in the audit log; a server that is down reconnected by hand. `CONSOLE_SCREENSHOTS=<dir>` saves the views.
 */
let sys: TestSystem;
let applying: ApplyingServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** The stand-in for a server whose command is missing at start (the file appears later). */
let lateServer = '';
const shots = process.env.CONSOLE_SCREENSHOTS;
const WAIT = { timeout: 45_000 };

beforeAll(async () => {
  const executablePath = process.env.CHROMIUM_PATH;
  if (!executablePath) throw new Error('CHROMIUM_PATH is not set: run the suite with `npm test`, which finds or installs Chromium (scripts/ensure-chromium.sh)');
  applying = await startApplyingServer();
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  sys = await startSystem({
    policy: { ...policy, approval: { tools: ['notes/add_note'], timeoutMs: 120_000, approverRoles: ['admin'] } },
    servers: async (dir) => {
      // The late server's command names a file that does not exist yet: it is down from the start.
      lateServer = path.join(dir, 'late-server.js');
      return {
        notes: { command: process.execPath, args: [NOTES_SERVER, '--stdio', '--data', path.join(dir, 'notes.json')], honoursIdempotencyKey: true },
        everything: { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] },
        applying: { url: applying.url },
        late: { command: process.execPath, args: [lateServer, '--stdio', '--data', path.join(dir, 'late-notes.json')] },
      };
    },
  });
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  page = await context.newPage();
  page.on('pageerror', (e) => console.log('console page error:', e.message));
  if (shots) mkdirSync(shots, { recursive: true });
  await page.goto(`${sys.apiUrl}/console/`);
  await page.fill('#token', await sys.token('admin'));
  await page.click('#sign-in');
  await page.waitForSelector('text=u-ada (admin, demo)');
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await sys?.stop();
  await applying?.close();
});

const shot = async (p: Page, name: string): Promise<void> => {
  if (shots) await p.screenshot({ path: path.join(shots, `console-${name}.png`), fullPage: true });
};

test("an empty chat offers the demo model's sentences; one click sends it", async () => {
  const suggestion = page.locator('.suggestions .suggestion', { hasText: 'list notes' });
  await suggestion.waitFor(WAIT);
  await expect(page.locator('.suggestions .suggestion').allTextContents()).resolves.toEqual(expect.arrayContaining(['hello', 'add 2 and 3', 'ask me for my details']));
  await shot(page, 'suggestions');
  await suggestion.click();
  const turn = page.locator('.turn').last();
  await expect(turn.locator('.msg.user .text').textContent()).resolves.toBe('list notes');
  await page.locator('.turn[data-status="completed"]').first().waitFor(WAIT);
  // A conversation has begun: no more suggestions.
  await expect(page.locator('.suggestions').count()).resolves.toBe(0);
});

test("a turn's MCP messages: the tools/call and its result, redacted as in the audit log", async () => {
  await page.fill('#message', 'echo write to grace@example.org');
  await page.click('#send');
  await page.locator('.turn[data-status="completed"]').nth(1).waitFor(WAIT);
  const turn = page.locator('.turn').last();
  await turn.locator('details.mcp-messages > summary').click();
  const messages = turn.locator('.mcp-message');
  await messages.first().waitFor(WAIT);
  await expect(messages.count()).resolves.toBe(2);
  const request = (await messages.nth(0).locator('pre').textContent()) ?? '';
  expect(request).toContain('"method": "tools/call"');
  expect(request).toContain('"name": "echo"');
  expect(request).toMatch(/\[redacted:[0-9a-f]+\]/);
  expect(request).not.toContain('grace@example.org');
  await expect(messages.nth(1).getAttribute('data-direction')).resolves.toBe('server_to_host');
  const result = (await messages.nth(1).locator('pre').textContent()) ?? '';
  expect(result).toContain('"result"');
  expect(result).toMatch(/write to \[redacted:[0-9a-f]+\]/);
  expect(result).not.toContain('grace@example.org');
  await shot(page, 'mcp-messages');
});

test('the tools page: grouped by server, badges from the policy and annotations, schemas folded, search', async () => {
  await page.click('#tab-tools');
  const group = (server: string) => page.locator(`.tool-group[data-server="${server}"]`);
  const card = (name: string) => page.locator(`.catalog-tool[data-tool="${name}"]`);
  await card('notes__add_note').waitFor(WAIT);
  await expect(group('notes').locator('.catalog-tool').count()).resolves.toBeGreaterThanOrEqual(3);
  await expect(group('applying').locator('.catalog-tool').count()).resolves.toBe(2);
  // The policy: adding a note waits for a decision. The servers' hints: listing is read-only, apply destructive.
  await expect(card('notes__add_note').locator('.badge').allTextContents()).resolves.toEqual(['needs approval']);
  await expect(card('notes__list_notes').locator('.badge').allTextContents()).resolves.toEqual(['read-only']);
  await expect(card('applying__apply').locator('.badge').allTextContents()).resolves.toEqual(['destructive']);
  await expect(card('applying__read').locator('.badge').allTextContents()).resolves.toEqual(['read-only']);
  // The schema is folded inside the folded tool.
  await card('notes__add_note').locator(':scope > summary').click();
  const schema = card('notes__add_note').locator('details.schema');
  await expect(schema.getAttribute('open')).resolves.toBeNull();
  await schema.locator('summary').click();
  await expect(schema.locator('pre').isVisible()).resolves.toBe(true);
  await expect(schema.locator('pre').textContent()).resolves.toContain('"text"');
  await shot(page, 'tools-badges');

  // Search: every word must match the name, title, description or server.
  await page.fill('#tool-search', 'note list');
  await expect(page.locator('.catalog-tool').count()).resolves.toBe(1);
  await expect(page.locator('.catalog-tool').getAttribute('data-tool')).resolves.toBe('notes__list_notes');
  await expect(group('applying').count()).resolves.toBe(0);
  await page.fill('#tool-search', 'applies');
  await expect(page.locator('.catalog-tool').getAttribute('data-tool')).resolves.toBe('applying__apply');
  await page.fill('#tool-search', 'no such tool anywhere');
  await page.locator('text=No tool matches.').waitFor();
  await page.fill('#tool-search', '');
});

test('a server that is down shows a Reconnect button; once it can start, Reconnect connects it', async () => {
  await page.click('#tab-servers');
  const row = page.locator('tr[data-server="late"]');
  await row.locator('td.state-unavailable').waitFor(WAIT);
  await expect(page.locator('tr[data-server="notes"] .reconnect').count()).resolves.toBe(0);
  await row.locator('.reconnect button').click();
  await row.locator('.reconnect .outcome').waitFor(WAIT);
  await expect(row.locator('.reconnect .outcome').textContent()).resolves.toMatch(/^still unavailable/);
  await shot(page, 'servers-down');

  // The command's file appears: it runs the notes server (with the arguments the config gives).
  writeFileSync(lateServer, `require(${JSON.stringify(NOTES_SERVER)});\n`);
  await row.locator('.reconnect button').click();
  await row.locator('td.state-connected').waitFor(WAIT);
});

test('/docs opened from the console is signed in with its token: "Try it out" answers 200 without Authorize', async () => {
  await page.click('#tab-chat');
  const [docs] = await Promise.all([context.waitForEvent('page'), page.click('#open-docs')]);
  await docs.waitForSelector('text=Durable MCP host API', WAIT);
  // The Authorize button shows a locked padlock once a scheme is authorized.
  await docs.locator('.auth-wrapper .authorize.locked').waitFor(WAIT);
  const op = docs.locator('#operations-catalog-listSuggestions');
  await op.locator('.opblock-summary').click();
  await op.locator('button.try-out__btn').click();
  await op.locator('button.execute').click();
  await op.locator('.responses-wrapper .live-responses-table tbody tr.response td.response-col_status').first().waitFor(WAIT);
  await expect(op.locator('.live-responses-table tbody tr.response td.response-col_status').first().textContent()).resolves.toContain('200');
  await expect(op.locator('.live-responses-table tbody tr.response td.response-col_description').first().textContent()).resolves.toContain('list notes');
  await shot(docs, 'docs-signed-in');
  await docs.close();
});
