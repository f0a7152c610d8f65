import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describeInBrowser, launchChromium } from '@keyhook/testing/browser';
import { requestJson, TestReceiver } from '@keyhook/testing/support';
import { verify } from '@keyhook/webhook-verify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REFERENCE_HEADERS } from '../src/catalog.js';
import { tempDir } from './instances.js';
import { ServerProcess } from './server-process.js';

/**
 * The root README's browser walkthrough (SECTION), run as written: `npm start` (the real process, in
 * development), the portal link its banner prints, opened in Chromium; there, what the section
 * says a reader can do: create a key that works on the data plane, add an endpoint at a
 * receiver, send it a test event, and read the delivery with its attempt.
 */
const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const SECTION = '### The same in the browser';
/** Where the README's reader runs the server; the test's runs on a free port. */
const README_BASE = 'http://127.0.0.1:3000';

/** The banner lines the section shows, as patterns for a server at `base`: `…` stands for the token. */
function shownBanner(base: string): RegExp[] {
  const start = README.indexOf(`${SECTION}\n`);
  expect(start, SECTION).toBeGreaterThanOrEqual(0);
  const block = /```text\n([\s\S]*?)```/.exec(README.slice(start))?.[1];
  expect(block, 'the banner the section shows').toBeDefined();
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return block!
    .trimEnd()
    .split('\n')
    .map((line) => new RegExp(`^${literal(line.replace(README_BASE, base)).replace(/…/g, '[\\w-]+')}$`));
}

describeInBrowser("the root README's browser walkthrough, as written", () => {
  let browser: Awaited<ReturnType<typeof launchChromium>>;
  let page: Awaited<ReturnType<typeof browser.newPage>>;
  let server: ServerProcess;
  let receiver: TestReceiver;
  let temp: ReturnType<typeof tempDir>;
  let baseUrl: string;
  let link: string;

  beforeAll(async () => {
    temp = tempDir();
    server = new ServerProcess({ KEYHOOK_SQLITE_PATH: path.join(temp.dir, 'keyhook.db') });
    receiver = await TestReceiver.start();
    browser = await launchChromium();
    page = await browser.newPage();
    // A step that cannot happen fails naming its locator, well inside the test's own timeout.
    page.setDefaultTimeout(15_000);
  });
  afterAll(async () => {
    await browser?.close();
    if (server?.child.exitCode === null) await server.stop();
    await receiver?.close();
    temp?.remove();
  });

  it('npm start prints the link the section shows', async () => {
    baseUrl = await server.listening();
    const shown = shownBanner(baseUrl);
    expect(shown).toHaveLength(2);
    const printed = await server.waitFor(/^(Or in a browser: .*)\n( {2}\S+)$/m, 'the portal link');
    expect(printed[1]).toMatch(shown[0]!);
    expect(printed[2]).toMatch(shown[1]!);
    link = printed[2]!.trim();
  });

  it('opens the portal for tenant demo, and takes the token out of the address bar', async () => {
    await page.goto(link);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(page.url().startsWith(`${baseUrl}/api/v1/portal`)).toBe(true);
    expect(page.url()).not.toContain('token');
    expect(await page.title()).toBe('API keys · keyhook reference server');
    // The session the page holds, read as the page reads it, with its cookie.
    const session = await page.evaluate(
      async () => (await (await fetch('/api/v1/portal/api/session')).json()) as { session: object },
    );
    expect(session.session).toMatchObject({
      tenantId: 'demo',
      permissions: expect.arrayContaining(['keys:write']),
    });
  });

  it('creates a key with the scopes ticked, shown once, that works on the data plane', async () => {
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Name').fill('from the browser');
    await dialog.getByRole('checkbox', { name: /^sources:read/ }).check();
    await dialog.getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByLabel('API key', { exact: true }).inputValue();
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('row', { name: /from the browser/ }).waitFor();
    expect(await page.content()).not.toContain(secret);
    const sources = await requestJson('GET', `${baseUrl}/api/v1/sources`, { token: secret });
    expect(sources.status).toBe(200);
  });

  it('adds an endpoint, sends it a test event, and reads the delivery with its attempt', async () => {
    const url = receiver.url('/hooks');
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Endpoint URL').fill(url);
    await dialog.getByRole('checkbox', { name: /^run\.completed/ }).check();
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    const signingSecret = await page.getByLabel('Signing secret', { exact: true }).inputValue();
    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'hidden' });

    await page.getByRole('link', { name: url }).click();
    await page.getByLabel('Event type').selectOption('run.completed');
    await page.getByRole('button', { name: 'Send test event' }).click();
    const row = page.getByRole('row', { name: /run\.completed/ }).first();
    await expect.poll(() => row.innerText(), { timeout: 10_000 }).toMatch(/succeeded/i);
    const [delivery] = receiver.to('/hooks');
    const event = verify(delivery!.body, delivery!.headers as Record<string, string>, signingSecret, {
      headers: REFERENCE_HEADERS,
    });
    expect(event).toMatchObject({ type: 'run.completed' });

    await row.getByRole('link').click();
    const attempts = page.getByRole('table', { name: 'Every attempt, oldest first' });
    await expect.poll(() => attempts.getByRole('row').count()).toBe(2);
    expect(await attempts.getByRole('row').nth(1).innerText()).toMatch(/^1\s.*\s200\s/s);
  });
});
