import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { loadPolicyFile } from '../../src/config/policy';
import { ROOT, startSystem, type TestSystem } from '../helpers/system';

/**
 * The console in a real headless Chromium against the real system (Temporal, worker, MCP servers, the
 * demo model, the API): sign in, chat with live text, approve a call inline and from the inbox, see the
 * servers and tools, follow a long call's progress and an MCP task, answer a server's questions (a form,
 * a page to open), open the API docs. `CONSOLE_SCREENSHOTS=<dir>` saves the main views there (the
 * ones in docs/ come from such a run).
 */
let sys: TestSystem;
let browser: Browser;
let page: Page;
const shots = process.env.CONSOLE_SCREENSHOTS;

beforeAll(async () => {
  const executablePath = process.env.CHROMIUM_PATH;
  if (!executablePath) throw new Error('CHROMIUM_PATH is not set: run the suite with `npm test`, which finds or installs Chromium (scripts/ensure-chromium.sh)');
  const policy = loadPolicyFile(path.join(ROOT, 'examples/policy.json'));
  sys = await startSystem({ policy: { ...policy, approval: { tools: ['notes/add_note'], timeoutMs: 60_000, approverRoles: ['admin'] } } });
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  if (shots) mkdirSync(shots, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await sys?.stop();
});

const shot = async (name: string): Promise<void> => {
  if (shots) await page.screenshot({ path: path.join(shots, `console-${name}.png`), fullPage: true });
};
const lastTurn = () => page.locator('.turn').last();

test('sign in with a token: / leads to the console, which shows who is signed in', async () => {
  await page.goto(`${sys.apiUrl}/`);
  expect(new URL(page.url()).pathname).toBe('/console/');
  await page.fill('#token', await sys.token('admin'));
  await shot('sign-in');
  await page.click('#sign-in');
  await page.waitForSelector('text=u-ada (admin, demo)');
});

test('chat: the answer streams in while the turn runs, then the turn completes', async () => {
  // Slow text chunks, so the live text is seen before the durable answer.
  sys.model.setFaults([{ chunkDelayMs: 60, times: 1 }]);
  await page.fill('#message', 'hello');
  await page.click('#send');
  // Evaluated in the page: the last turn still running, with some of its answer already shown.
  await page.waitForFunction(`(() => {
    const turn = [...document.querySelectorAll('.turn')].at(-1);
    return turn?.getAttribute('data-status') === 'running' && (turn.querySelector('.answer')?.textContent ?? '').length > 0;
  })()`);
  await page.locator('.turn[data-status="completed"]').first().waitFor();
  await expect(lastTurn().locator('.answer').textContent()).resolves.toContain('Hello! I am the demo model');
  sys.model.setFaults([]);
});

test('an approval is asked inline; approving runs the tool once and the turn completes', async () => {
  await page.fill('#message', 'remember that the milk is low');
  await page.click('#send');
  const card = lastTurn().locator('.approval');
  await card.locator('button:has-text("Approve")').waitFor();
  await expect(card.textContent()).resolves.toContain('notes__add_note');
  await shot('approval');
  await card.locator('button:has-text("Approve")').click();
  await page.locator('.turn[data-status="completed"]').nth(1).waitFor();
  await expect(lastTurn().locator('.answer').textContent()).resolves.toContain('Done. The notes server said');
  await expect(lastTurn().locator('.tool.completed[data-tool="notes__add_note"]').count()).resolves.toBe(1);
  await shot('chat');
});

test('the approvals inbox lists a waiting call and approves it', async () => {
  await page.fill('#message', 'remember that the bread is gone');
  await page.click('#send');
  await lastTurn().locator('.approval button:has-text("Approve")').waitFor();
  await page.click('#tab-approvals');
  const item = page.locator('.inbox-item');
  await item.waitFor();
  await expect(item.textContent()).resolves.toContain('the bread is gone');
  await shot('approvals');
  await item.locator('button:has-text("Approve")').click();
  await page.waitForSelector('text=Nothing waits for you.');
  await page.click('#tab-chat');
  await page.locator('.turn[data-status="completed"]').nth(2).waitFor();
});

test('servers and tools: each server with its state, the tools the caller may use with their schemas', async () => {
  await page.click('#tab-servers');
  await page.locator('tr[data-server="notes"] td.state-connected').waitFor();
  await page.locator('tr[data-server="everything"] td.state-connected').waitFor();
  await shot('servers');
  await page.click('#tab-tools');
  await page.locator('.catalog-tool[data-tool="notes__add_note"]').waitFor();
  await page.locator('.catalog-tool[data-tool="notes__add_note"] > summary').click();
  await expect(page.locator('.catalog-tool[data-tool="notes__add_note"] pre').textContent()).resolves.toContain('"text"');
  await shot('tools');
});

test('a tool tried from the tools tab runs through a turn of the chat session: its result, its trace, the policy applies', async () => {
  const echo = page.locator('.catalog-tool[data-tool="everything__echo"]');
  await echo.locator(':scope > summary').click();
  await echo.locator('form.try input[name="message"]').fill('tried by hand');
  await echo.locator('form.try button[type="submit"]').click();
  // The chat shows the turn: the call, then its result as the answer. No model step.
  await page.locator('#message').waitFor();
  const turn = lastTurn();
  await expect(turn.locator('.msg.user .text').textContent()).resolves.toBe('Run everything/echo {"message":"tried by hand"}');
  await page.locator('.turn[data-status="completed"]').nth(3).waitFor();
  await expect(turn.locator('.answer').textContent()).resolves.toContain('tried by hand');
  await expect(turn.locator('.tool.completed[data-tool="everything__echo"]').count()).resolves.toBe(1);
  // Its trace: the call and its result with how long it took, and the link to the Temporal UI.
  await turn.locator('details.trace summary').click();
  await expect(turn.locator('details.trace tr[data-kind="tool_call_started"]').textContent()).resolves.toContain('everything/echo');
  await expect(turn.locator('details.trace tr[data-kind="tool_call_finished"]').textContent()).resolves.toMatch(/\d+ ms.*everything__echo ok/);
  await expect(turn.locator('details.trace tr[data-kind="status"]').allTextContents()).resolves.not.toContainEqual(expect.stringContaining('request to the model'));
  await expect(turn.locator('details.trace a').getAttribute('href')).resolves.toContain(encodeURIComponent(await turn.getAttribute('data-turn') ?? '?'));
  await shot('trace');

  // A chat turn's trace shows its LLM steps too.
  const first = page.locator('.turn').first();
  await first.locator('details.trace summary').click();
  await expect(first.locator('details.trace').textContent()).resolves.toMatch(/LLMstep 1: request to the model/);

  // The policy applies as for the model: adding a note needs an approval here, asked inline.
  await page.click('#tab-tools');
  const add = page.locator('.catalog-tool[data-tool="notes__add_note"]');
  await add.locator(':scope > summary').click();
  await add.locator('form.try input[name="text"]').fill('typed in the form');
  await add.locator('form.try button[type="submit"]').click();
  const card = lastTurn().locator('.approval');
  await card.locator('button:has-text("Approve")').waitFor();
  await card.locator('button:has-text("Approve")').click();
  await page.locator('.turn[data-status="completed"]').nth(4).waitFor();
  await expect(lastTurn().locator('.answer').textContent()).resolves.toContain('typed in the form');
});

test('a message queued behind a turn that waits for approval says why, and approving from there releases both', async () => {
  await page.click('#tab-chat');
  await page.fill('#message', 'remember that the cat is fed');
  await page.click('#send');
  const ahead = lastTurn();
  await ahead.locator('.approval button:has-text("Approve")').waitFor();
  const aheadId = await ahead.getAttribute('data-turn');
  await page.fill('#message', 'hello');
  await page.click('#send');
  const queued = lastTurn();
  const waiting = queued.locator('.waiting');
  await waiting.locator('button:has-text("Approve")').waitFor();
  await expect(waiting.textContent()).resolves.toMatch(/waits for a decision.*notes__add_note.*the cat is fed.*denied at/);
  await expect(waiting.getAttribute('data-waiting')).resolves.toBe(aheadId);
  await shot('waiting');
  await waiting.locator('button:has-text("Approve")').click();
  await page.locator(`.turn[data-turn="${aheadId ?? '?'}"][data-status="completed"]`).waitFor();
  await page.locator(`.turn[data-turn="${(await queued.getAttribute('data-turn')) ?? '?'}"][data-status="completed"]`).waitFor();
  await expect(queued.locator('.waiting').count()).resolves.toBe(0);
  await expect(queued.locator('.answer').textContent()).resolves.toContain('Hello! I am the demo model');
});

test("a server's question during a tool call is a form in the turn; the answer runs the call again", async () => {
  await page.click('#tab-chat');
  await page.fill('#message', 'ask me for my details');
  await page.click('#send');
  const question = lastTurn().locator('form[data-question]');
  await question.waitFor({ timeout: 30_000 });
  await expect(question.textContent()).resolves.toContain('everything asks: Please provide inputs for the following fields:');
  await question.locator('input[name="name"]').fill('Grace Hopper');
  await question.locator('input[name="integer"]').fill('500');
  // Out of the schema's range: said while typing, and Send sends nothing; the form stays.
  await expect(question.locator('[data-field="integer"] .problem').textContent()).resolves.toContain('must be at most 100');
  await question.locator('button:has-text("Send")').click();
  await expect(question.locator('.error').count()).resolves.toBe(0);
  await shot('question');
  await question.locator('input[name="integer"]').fill('9');
  const id = (await lastTurn().getAttribute('data-turn')) ?? '?';
  await question.locator('button:has-text("Send")').click();
  await page.locator(`.turn[data-turn="${id}"][data-status="completed"]`).waitFor();
  // The answer is Markdown: the server's list of what it got is a list.
  await expect(lastTurn().locator('.answer li').allTextContents()).resolves.toContain('Name: Grace Hopper');
  await expect(lastTurn().locator('[data-question]').textContent()).resolves.toContain('accept');
});

test("a server that asks the host's model (sampling) gets its answer within the turn", async () => {
  await page.click('#tab-chat');
  await page.fill('#message', 'sample a haiku about lanterns');
  await page.click('#send');
  await page.waitForFunction(`(() => [...document.querySelectorAll('.turn')].at(-1)?.querySelector('.answer')?.textContent?.includes('Quiet lanterns'))()`);
  await expect(lastTurn().locator('.tool.completed[data-tool="everything__trigger-sampling-request"]').count()).resolves.toBe(1);
});

test('a long tool call shows its progress bar on the tool card while it runs, then its result', async () => {
  await page.fill('#message', 'run a long operation');
  await page.click('#send');
  const card = lastTurn().locator('.tool[data-tool="everything__trigger-long-running-operation"]');
  // The server reports 4 steps over 2 s; the bar shows one of them while the call still runs.
  await card.locator('.progress progress[max="4"]').waitFor({ timeout: 30_000 });
  await expect(card.locator('.progress').textContent()).resolves.toMatch(/[1-4]\/4/);
  await shot('progress');
  await lastTurn().locator('.tool.completed[data-tool="everything__trigger-long-running-operation"]').waitFor();
  await expect(card.locator('.progress').count()).resolves.toBe(0);
  const id = (await lastTurn().getAttribute('data-turn')) ?? '?';
  await page.locator(`.turn[data-turn="${id}"][data-status="completed"]`).waitFor();
  await expect(lastTurn().locator('.answer').textContent()).resolves.toContain('Long running operation completed. Duration: 2 seconds, Steps: 4.');
});

test('a tool that runs as an MCP task (simulate-research-query): its card runs, then the report is the answer', async () => {
  await page.fill('#message', 'research tidal power');
  await page.click('#send');
  const turn = lastTurn();
  // The research takes four one-second stages: the card is seen running before it completes.
  await turn.locator('.tool.running[data-tool="everything__simulate-research-query"]').waitFor({ timeout: 30_000 });
  await expect(turn.locator('.tool[data-tool="everything__simulate-research-query"] code').textContent()).resolves.toBe('{"topic":"tidal power"}');
  const id = (await turn.getAttribute('data-turn')) ?? '?';
  await page.locator(`.turn[data-turn="${id}"][data-status="completed"]`).waitFor({ timeout: 60_000 });
  await expect(turn.locator('.tool.completed[data-tool="everything__simulate-research-query"]').count()).resolves.toBe(1);
  const answer = (await turn.locator('.answer').textContent()) ?? '';
  await expect(turn.locator('.answer h1').first().textContent()).resolves.toBe('Research Report: tidal power');
  expect(answer).toContain('Stage 4: Generating report ✓');
});

test("a server's URL-mode question shows the page as a link and an Open button; Open goes there and the call completes", async () => {
  // window.open would open a real tab on example.org (no network here): record the call instead.
  await page.evaluate(`(() => { window.opened = []; window.open = (...args) => { window.opened.push(args); return null; }; })()`);
  await page.fill('#message', 'send me to https://example.org/pay');
  await page.click('#send');
  const question = lastTurn().locator('form[data-question][data-mode="url"]');
  await question.waitFor({ timeout: 30_000 });
  await expect(question.locator('a').getAttribute('href')).resolves.toBe('https://example.org/pay');
  await expect(question.textContent()).resolves.toContain('everything asks you to open https://example.org/pay: Please open https://example.org/pay to continue.');
  await shot('url-question');
  const id = (await lastTurn().getAttribute('data-turn')) ?? '?';
  await question.locator('button:has-text("Open")').click();
  await page.locator(`.turn[data-turn="${id}"][data-status="completed"]`).waitFor();
  await expect(page.evaluate('window.opened')).resolves.toEqual([['https://example.org/pay', '_blank', 'noopener,noreferrer']]);
  await expect(lastTurn().locator('[data-question]').textContent()).resolves.toContain('accept');
  const answer = (await lastTurn().locator('.answer').textContent()) ?? '';
  expect(answer).toContain('User completed the URL elicitation flow');
  expect(answer).toContain('URL: https://example.org/pay');
});

test('the API docs page renders the OpenAPI document', async () => {
  const docs = await browser.newPage();
  await docs.goto(`${sys.apiUrl}/docs`);
  await docs.waitForSelector('text=Durable MCP host API');
  await docs.waitForSelector('[data-path="/v1/sessions/{sessionId}/messages"]');
  await docs.close();
});
