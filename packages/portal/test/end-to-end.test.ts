import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { CreateWebhookInput } from '@keyhook/core';
import { TestReceiver } from '@keyhook/testing/support';
import { verify } from '@keyhook/webhook-verify';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { expectAccessible, fact, fromPage, tabTo } from './page-helpers.js';
import { ALL, EVENTS, HEADERS, onEachStack, SCREENSHOTS } from './portal-hosts.js';

/*
 * The portal end to end, as a customer uses it (issue 31's browser suite): a host app serves
 * keyhook, its portal and a guarded route of its own; Chromium opens a minted link; the test
 * acts through roles, labels and the keyboard; a real receiver gets and verifies the deliveries.
 * It runs through Express with SQLite and through Fastify with PostgreSQL. Each page is scanned
 * with axe-core under its own CSP. Screenshots go to a temporary folder, or to
 * packages/portal/screenshots with KEYHOOK_UPDATE_SCREENSHOTS=1 (the README shows those).
 *
 * Each case signs in to a tenant of its own, in a browser context of its own, and makes the keys,
 * endpoints and receiver paths it needs: a case that fails leaves nothing the next one stands on.
 */

/** How long a wait on the delivery worker may take on a busy machine: a bound, never a pace. */
const SETTLES = { timeout: 60_000 };

/** How a receiver path answers, changed by its case as it goes. */
interface Answering {
  status: number;
  /** A Retry-After sent with a 503: it holds the retry back that many seconds. */
  retryAfter?: string | undefined;
}

/** A case's browser: its context and page, signed in to its own tenant by a link now used. */
interface Open {
  context: BrowserContext;
  page: Page;
  tenantId: string;
  link: string;
  /** Script errors and CSP refusals the page reported. */
  pageErrors: string[];
}

onEachStack('the portal end to end', (stack) => {
  const { runs } = stack;
  const host = () => stack.host();
  let receiver: TestReceiver;
  let tenants = 0;
  let paths = 0;
  let open: Open | undefined;

  beforeAll(async () => {
    if (runs) receiver = await TestReceiver.start();
  });
  afterAll(async () => {
    await receiver?.close();
  });
  afterEach(async () => {
    const pageErrors = open?.pageErrors ?? [];
    await open?.context.close();
    open = undefined;
    expect(pageErrors).toEqual([]);
  });

  /** Opens a minted link for a new tenant (keys may carry items:read only) in a new context. */
  const signIn = async (): Promise<Open> => {
    const tenantId = `acme_e2e_${++tenants}`;
    const context = await stack.browser().newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) pageErrors.push(message.text());
    });
    const link = await host().keyhook.portal.createSession({
      tenantId,
      permissions: ALL,
      scopes: ['items:read'],
    });
    open = { context, page, tenantId, link: link.token, pageErrors };
    await page.goto(`${host().base}${link.url}`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    return open;
  };

  /** A receiver path of its own, answering as `answering` says at each request. */
  const receiverPath = (answering: Answering = { status: 200 }): string => {
    const path = `/hooks/${++paths}`;
    receiver.on(path, (_request, _index, res) => {
      res
        .writeHead(answering.status, {
          'content-type': 'text/plain',
          ...(answering.retryAfter ? { 'retry-after': answering.retryAfter } : {}),
        })
        .end(answering.status === 200 ? 'ok' : 'down for maintenance');
    });
    return path;
  };

  /** An endpoint at `path` made past the portal, as the host's code would; its secret once. */
  const endpointAt = async (tenantId: string, path: string, input: Partial<CreateWebhookInput> = {}) =>
    host().keyhook.webhooks.create(tenantId, { url: receiver.url(path), events: ['item.created'], ...input });

  const openEndpoint = async (page: Page, webhookId: string) => {
    await page.goto(`${host().base}/api/v1/portal/#/webhooks/${webhookId}`);
    await page.getByRole('heading', { name: 'Deliveries', exact: true }).waitFor();
  };

  /** The settings of the endpoint at `url` as the store holds them, read past the portal. */
  const storedEndpoint = async (tenantId: string, url: string) => {
    const endpoint = (await host().keyhook.webhooks.list(tenantId, 100)).find((item) => item.url === url);
    if (!endpoint) throw new Error(`no endpoint at ${url}`);
    // The record's field keeps the old name, rateLimit, for now.
    const { events, status, signatureScheme, deliveryRate } = endpoint;
    return { url, events, status, signatureScheme, deliveryRate };
  };

  /** A secret the UI showed once: in no later read, nowhere in the page, not in the server's log. */
  const expectKept = async (page: Page, secret: string) => {
    expect(secret.length).toBeGreaterThan(20);
    for (const path of ['/keys', '/webhooks', '/session']) {
      const read = await fromPage(page, 'GET', path);
      expect(read.status).toBe(200);
      expect(read.text).not.toContain(secret);
    }
    expect(await page.content()).not.toContain(secret);
    expect(JSON.stringify(host().logs)).not.toContain(secret);
  };

  it.runIf(runs)('opens from a minted link, into a session cookie with the stated flags', async () => {
    const { page, context, link } = await signIn();
    expect(page.url()).not.toContain(link);
    const [cookie] = await context.cookies(`${host().base}/api/v1/portal/`);
    expect(cookie).toMatchObject({
      name: 'keyhook_portal',
      path: '/api/v1/portal',
      httpOnly: true,
      sameSite: 'Strict',
      secure: false, // development, over plain HTTP; production sets Secure (the HTTP suite)
    });
    await expectAccessible(page, 'the keys page, empty');
    await expectKept(page, link);
    await expectKept(page, cookie!.value);
  });

  it.runIf(runs)(
    'creates a key by keyboard alone; its secret is shown once and opens the host route',
    async () => {
      const { page, tenantId } = await signIn();
      await tabTo(page, 'Create key');
      await page.keyboard.press('Enter');
      await page.getByRole('dialog').waitFor();
      await expectAccessible(page, 'the create-key dialog');
      await tabTo(page, 'Name');
      await page.keyboard.type('Deploy bot');
      await tabTo(page, /^items:read/);
      await page.keyboard.press('Space');
      // The session may grant items:read only: items:write is not offered.
      expect(await page.getByRole('checkbox', { name: /items:write/ }).count()).toBe(0);
      await tabTo(page, 'Create key');
      await page.keyboard.press('Enter');
      const secretField = page.getByLabel('API key', { exact: true });
      await secretField.waitFor();
      const apiKey = await secretField.inputValue();
      expect(await page.getByRole('dialog').innerText()).toContain('It is shown only this once');
      await expectAccessible(page, 'the key secret dialog');
      await page.keyboard.press('Escape');
      await page.getByRole('row', { name: /Deploy bot/ }).waitFor();

      const guarded = await fetch(`${host().base}/api/v1/items`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      expect(guarded.status).toBe(200);
      expect(await guarded.json()).toEqual({ tenantId, items: [] });
      await expectKept(page, apiKey);
      await page.screenshot({ path: join(SCREENSHOTS, 'keys.png') });
    },
  );

  it.runIf(runs)("refuses a key with a scope outside the session's, sent by hand", async () => {
    const { page, tenantId } = await signIn();
    const session = JSON.parse((await fromPage(page, 'GET', '/session')).text) as { csrfToken: string };
    const refused = await fromPage(
      page,
      'POST',
      '/keys',
      { name: 'sneaky', scopes: ['items:write'] },
      session.csrfToken,
    );
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 'forbidden' } });
    expect(await host().keyhook.keys.list(tenantId, 100)).toEqual([]);
  });

  it.runIf(runs)(
    'adds an endpoint by keyboard alone, at a real receiver; its signing secret is shown once',
    async () => {
      const { page, tenantId } = await signIn();
      const url = receiver.url(receiverPath());
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('heading', { name: 'Webhook endpoints' }).waitFor();
      await tabTo(page, 'Add endpoint');
      await page.keyboard.press('Enter');
      await page.getByRole('dialog').waitFor();
      await tabTo(page, 'Endpoint URL');
      await page.keyboard.type(url);
      await tabTo(page, /^item\.created/);
      await page.keyboard.press('Space');
      await tabTo(page, 'Add endpoint');
      await page.keyboard.press('Enter');
      const secretField = page.getByLabel('Signing secret', { exact: true });
      await secretField.waitFor();
      const signingSecret = await secretField.inputValue();
      expect(signingSecret).toMatch(/^whsec_/);
      await tabTo(page, 'Done');
      await page.keyboard.press('Enter');
      await page.getByRole('link', { name: url }).waitFor();
      expect(await storedEndpoint(tenantId, url)).toMatchObject({
        events: ['item.created'],
        status: 'active',
      });
      await expectKept(page, signingSecret);
      await expectAccessible(page, 'the endpoints page');
    },
  );

  it.runIf(runs)('sends a test event and watches it succeed in the log, with its attempt', async () => {
    const { page, tenantId } = await signIn();
    const path = receiverPath();
    const { webhook, secret } = await endpointAt(tenantId, path);
    await openEndpoint(page, webhook.id);
    await expectAccessible(page, 'the endpoint page');
    await page.getByLabel('Event type').selectOption('item.created');
    expect(JSON.parse(await page.getByLabel('Event data (JSON)').inputValue())).toEqual(
      EVENTS['item.created'].example,
    );
    await page.getByRole('button', { name: 'Send test event' }).click();
    const row = page.getByRole('row', { name: /item\.created/ }).first();
    await expect.poll(() => row.innerText(), SETTLES).toMatch(/succeeded/i);
    // A test event is marked so in the log.
    expect(await row.locator('.badge-test').innerText()).toBe('test');

    const [delivery] = receiver.to(path);
    const event = verify(delivery!.body, delivery!.headers as Record<string, string>, secret!, {
      headers: HEADERS,
    });
    expect(event).toMatchObject({ type: 'item.created', data: EVENTS['item.created'].example });

    await row.getByRole('link').click();
    await page.getByRole('heading', { name: /^Delivery / }).waitFor();
    const attempts = page.getByRole('table', { name: 'Every attempt, oldest first' });
    await expect.poll(() => attempts.getByRole('row').count(), SETTLES).toBe(2);
    expect(await attempts.getByRole('row').nth(1).innerText()).toMatch(/^1\s.*\s200\s/s);
    await expectAccessible(page, 'the delivery page');
    await page.screenshot({ path: join(SCREENSHOTS, 'delivery.png'), fullPage: true });
  });

  it.runIf(runs)(
    'shows failed attempts with their status codes, retries once the receiver is back, and recovers',
    async () => {
      const { page, tenantId } = await signIn();
      const answering: Answering = { status: 503 };
      const path = receiverPath(answering);
      const { webhook } = await endpointAt(tenantId, path);
      await openEndpoint(page, webhook.id);
      await page.getByRole('button', { name: 'Send test event' }).click();
      const failing = page.getByRole('row', { name: /item\.created/ }).first();
      await expect.poll(() => failing.innerText(), SETTLES).toMatch(/failed/i);
      await failing.getByRole('link').click();
      const attempts = page.getByRole('table', { name: 'Every attempt, oldest first' });
      await expect.poll(() => attempts.getByRole('row').count(), SETTLES).toBe(4);
      for (const n of [1, 2, 3]) {
        expect(await attempts.getByRole('row').nth(n).innerText()).toMatch(
          new RegExp(`^${n}\\s.*\\s503\\s`, 's'),
        );
      }
      expect(await attempts.innerText()).toContain('down for maintenance');

      answering.status = 200;
      await page.getByRole('button', { name: 'Retry delivery' }).click();
      await expect.poll(() => attempts.getByRole('row').count(), SETTLES).toBe(5);
      expect(await attempts.getByRole('row').nth(4).innerText()).toMatch(/^4\s.*\s200\s/s);
      await expectAccessible(page, 'the delivery page with failed attempts');

      // Succeeded: the same button place offers a resend, of the same event.
      await page.getByRole('button', { name: 'Resend delivery' }).click();
      await page.getByText('Delivery queued to be sent again, with the same event id.').waitFor();
      await expect.poll(() => attempts.getByRole('row').count(), SETTLES).toBe(6);
      expect(await attempts.getByRole('row').nth(5).innerText()).toMatch(/^5\s.*\s200\s/s);
      const [fourth, fifth] = receiver
        .to(path)
        .slice(-2)
        .map((r) => r.headers[HEADERS.eventId]);
      expect(fifth).toBe(fourth);

      // Waiting an hour for its retry (Retry-After): retry now brings it forward.
      answering.status = 503;
      answering.retryAfter = '3600';
      await page.getByRole('link', { name: 'Back to the endpoint' }).click();
      await page.getByRole('button', { name: 'Send test event' }).click();
      const waiting = page.getByRole('row', { name: /item\.created/ }).first();
      await expect.poll(() => waiting.innerText(), SETTLES).toMatch(/retry/i);
      await waiting.getByRole('link').click();
      answering.status = 200;
      answering.retryAfter = undefined;
      await page.getByRole('button', { name: 'Retry now' }).click();
      await expect.poll(() => attempts.getByRole('row').count(), SETTLES).toBe(3);
      expect(await attempts.getByRole('row').nth(2).innerText()).toMatch(/^2\s.*\s200\s/s);
      await expectAccessible(page, 'the delivery page after a retry now');

      // A second failure, recovered in bulk once the receiver is back.
      answering.status = 503;
      await page.getByRole('link', { name: 'Back to the endpoint' }).click();
      await page.getByRole('button', { name: 'Send test event' }).click();
      const second = page.getByRole('row', { name: /item\.created/ }).first();
      await expect.poll(() => second.innerText(), SETTLES).toMatch(/failed/i);
      answering.status = 200;
      await page.getByRole('button', { name: 'Recover failed deliveries' }).click();
      await page.getByText('1 failed delivery queued again.').waitFor();
      await expect.poll(() => second.innerText(), SETTLES).toMatch(/succeeded/i);
    },
  );

  it.runIf(runs)(
    'rotates the signing secret with an overlap: the receiver verifies with both secrets',
    async () => {
      const { page, tenantId } = await signIn();
      const path = receiverPath();
      const { webhook, secret } = await endpointAt(tenantId, path);
      await openEndpoint(page, webhook.id);
      await page.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByLabel('Keep the old secret signing for').selectOption({ label: '1 hour' });
      await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
      const secretField = page.getByLabel('Signing secret', { exact: true });
      await secretField.waitFor();
      const rotated = await secretField.inputValue();
      expect(rotated).not.toBe(secret);
      await page.getByRole('button', { name: 'Done' }).click();

      await page.getByRole('button', { name: 'Send test event' }).click();
      await receiver.waitFor(() => receiver.to(path).length > 0, SETTLES.timeout);
      const [delivery] = receiver.to(path);
      const headers = delivery!.headers as Record<string, string>;
      expect(headers[HEADERS.signature]!.match(/v1=/g)).toHaveLength(2);
      for (const signedWith of [secret!, rotated]) {
        expect(verify(delivery!.body, headers, signedWith, { headers: HEADERS }).type).toBe('item.created');
      }
      await expectKept(page, rotated);
    },
  );

  it.runIf(runs)('lists each endpoint with its recent success rate', async () => {
    const { page, tenantId } = await signIn();
    const answering: Answering = { status: 200 };
    const path = receiverPath(answering);
    const { webhook } = await endpointAt(tenantId, path, { description: 'Order sync' });
    await endpointAt(tenantId, receiverPath(), { description: 'Nothing sent here yet' });
    const attemptsSoFar = async () =>
      (await host().keyhook.store.countRecentAttempts(tenantId, new Date(0))).find(
        (count) => count.webhookId === webhook.id,
      );
    // One delivery that succeeds at once, then one the receiver answers 503 three times.
    await host().keyhook.webhooks.sendTestEvent(tenantId, webhook.id, { type: 'item.created' });
    await expect.poll(attemptsSoFar, SETTLES).toEqual({ webhookId: webhook.id, succeeded: 1, failed: 0 });
    answering.status = 503;
    await host().keyhook.webhooks.sendTestEvent(tenantId, webhook.id, { type: 'item.created' });
    await expect.poll(attemptsSoFar, SETTLES).toEqual({ webhookId: webhook.id, succeeded: 1, failed: 3 });

    await page.getByRole('link', { name: 'Webhooks' }).click();
    const row = page.getByRole('row', { name: new RegExp(receiver.url(path)) });
    await expect.poll(() => row.innerText(), SETTLES).toContain('25 % of 4 attempts');
    await expectAccessible(page, 'the endpoints page with attempts');
    await page.screenshot({ path: join(SCREENSHOTS, 'endpoints.png') });
  });

  it.runIf(runs)(
    'adds an endpoint signed with Standard Webhooks at 5 per second, and shows both on its page',
    async () => {
      const { page, tenantId } = await signIn();
      const path = receiverPath();
      const url = receiver.url(path);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByLabel('Endpoint URL').fill(url);
      await dialog.getByRole('checkbox', { name: 'item.created' }).check();
      await dialog.getByRole('radio', { name: 'Standard Webhooks' }).check();
      await dialog.getByRole('checkbox', { name: 'Limit deliveries' }).check();
      await dialog.getByLabel('Deliveries per second').fill('5');
      await expectAccessible(page, 'the add-endpoint dialog with its delivery settings');
      await dialog.getByRole('button', { name: 'Add endpoint' }).click();
      const secretField = page.getByLabel('Signing secret', { exact: true });
      await secretField.waitFor();
      const standardSecret = await secretField.inputValue();
      await page.getByRole('button', { name: 'Done' }).click();

      expect(await storedEndpoint(tenantId, url)).toMatchObject({
        signatureScheme: 'standard-webhooks',
        deliveryRate: { perSecond: 5 },
      });
      await page.getByRole('link', { name: url }).click();
      await page.getByRole('heading', { name: 'Deliveries', exact: true }).waitFor();
      expect(await fact(page, 'Signature scheme')).toBe('Standard Webhooks');
      expect(await fact(page, 'Delivery rate')).toBe('5 per second');
      await expectAccessible(page, 'the endpoint page with its delivery settings');

      // A delivery really is signed the Standard Webhooks way, and the catalog's call verifies it.
      await page.getByRole('button', { name: 'Send test event' }).click();
      await receiver.waitFor(() => receiver.to(path).length > 0, SETTLES.timeout);
      const [delivery] = receiver.to(path);
      const headers = delivery!.headers as Record<string, string>;
      expect(headers['webhook-signature']).toMatch(/^v1,/);
      expect(headers[HEADERS.signature]).toBeUndefined();
      expect(verify(delivery!.body, headers, standardSecret, { headers: HEADERS }).type).toBe('item.created');
      await page
        .getByRole('row', { name: /item\.created/ })
        .first()
        .waitFor();
      await expectKept(page, standardSecret);
      await page.screenshot({ path: join(SCREENSHOTS, 'endpoint.png'), fullPage: true });
    },
  );

  it.runIf(runs)(
    'refuses a delivery rate of 0 or 5000 in the edit form, changing nothing; then edits both back',
    async () => {
      const { page, tenantId } = await signIn();
      const path = receiverPath();
      const url = receiver.url(path);
      const { webhook } = await endpointAt(tenantId, path, {
        signatureScheme: 'standard-webhooks',
        deliveryRate: { perSecond: 5 },
      });
      await openEndpoint(page, webhook.id);
      const before = await storedEndpoint(tenantId, url);
      await page.getByRole('button', { name: 'Edit endpoint' }).click();
      const dialog = page.getByRole('dialog', { name: 'Edit the endpoint' });
      const rate = dialog.getByLabel('Deliveries per second');
      expect(await rate.inputValue()).toBe('5');
      expect(await dialog.getByRole('radio', { name: 'Standard Webhooks' }).isChecked()).toBe(true);
      for (const [typed, refusal] of [
        ['0', 'Deliveries per second must be at least 0.01'],
        ['5000', 'Deliveries per second must be at most 1000'],
      ] as const) {
        await rate.fill(typed);
        await dialog.getByRole('button', { name: 'Save changes' }).click();
        await dialog.getByText(refusal, { exact: true }).waitFor();
        expect(await rate.getAttribute('aria-invalid')).toBe('true');
        expect(await storedEndpoint(tenantId, url)).toEqual(before);
      }
      await expectAccessible(page, 'the edit dialog with a refused rate');

      await dialog.getByRole('checkbox', { name: 'Limit deliveries' }).uncheck();
      await dialog.getByRole('radio', { name: 'keyhook (t=…,v1=…)' }).check();
      await dialog.getByRole('button', { name: 'Save changes' }).click();
      await page.getByText(/saved: signed with keyhook/).waitFor();
      expect(await page.getByRole('dialog').count()).toBe(0);
      // The page reads the endpoint again after the save.
      await expect.poll(() => fact(page, 'Signature scheme'), SETTLES).toBe('keyhook (t=…,v1=…)');
      expect(await fact(page, 'Delivery rate')).toBe('No limit');
      expect(await storedEndpoint(tenantId, url)).toMatchObject({
        url,
        events: ['item.created'],
        signatureScheme: 'keyhook',
        deliveryRate: null,
      });
      await expectAccessible(page, 'the endpoint page after the edit');
    },
  );

  it.runIf(runs)('shows the event catalog with the host header names', async () => {
    const { page } = await signIn();
    await page.getByRole('link', { name: 'Event catalog' }).click();
    await page.getByRole('heading', { name: 'item.created' }).waitFor();
    const text = await page.getByRole('main').innerText();
    expect(text).toContain('x-acme-signature');
    expect(text).toContain('An item was created.');
    // Each field of the data, with its type and description, as a table.
    const fields = page.getByRole('table', { name: "The fields of item.created's data" });
    expect(await fields.getByRole('row', { name: /itemId/ }).innerText()).toMatch(
      /itemId\s+string\s+The item/,
    );
    await expectAccessible(page, 'the event catalog');
    await page.screenshot({ path: join(SCREENSHOTS, 'catalog.png'), fullPage: true });
  });

  it.runIf(runs)("gives nothing of another tenant's, in the pages or by hand", async () => {
    const { page, tenantId } = await signIn();
    const { webhook } = await host().keyhook.webhooks.create(`${tenantId}_other`, {
      url: 'http://127.0.0.1:9/theirs',
      events: ['item.created'],
    });
    await page.goto(`${host().base}/api/v1/portal/#/webhooks/${webhook.id}`);
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('main').innerText()).not.toContain('/theirs');
    const byHand = await fromPage(page, 'GET', `/webhooks/${webhook.id}`);
    expect(byHand.status).toBe(404);
    const list = await fromPage(page, 'GET', '/webhooks');
    expect(list.text).not.toContain(webhook.id);
  });

  it.runIf(runs)('refuses a state-changing request from another origin', async () => {
    const { context, tenantId } = await signIn();
    const evil = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title>');
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const other = await context.newPage();
      // localhost is another site than 127.0.0.1: the browser is signed in to the portal there.
      await other.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
      const target = `${host().base}/api/v1/portal/api/keys`;
      const sent = await other.evaluate(async (url) => {
        const reply = await fetch(url, {
          method: 'POST',
          mode: 'no-cors',
          credentials: 'include',
          headers: { 'content-type': 'text/plain' },
          body: JSON.stringify({ name: 'forged', scopes: ['items:read'] }),
        }).catch(() => undefined);
        return reply !== undefined;
      }, target);
      // The request went out (an opaque answer): the server refused it, not the browser.
      expect(sent).toBe(true);
      await other.close();
    } finally {
      evil.closeAllConnections();
      await new Promise((resolve) => evil.close(resolve));
    }
    expect(await host().keyhook.keys.list(tenantId, 100)).toEqual([]);
  });

  it.runIf(runs)(
    'shows an ed25519 endpoint’s public key, and a rotation names the new one, with no secret to copy',
    async () => {
      const { page, tenantId } = await signIn();
      const { webhook } = await endpointAt(tenantId, receiverPath(), { keyType: 'ed25519' });
      await openEndpoint(page, webhook.id);
      expect(await fact(page, 'Public key (ed25519)')).toBe(webhook.publicKey);
      await expectAccessible(page, 'the page of an ed25519 endpoint');

      await page.getByRole('button', { name: 'Rotate secret' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
      // The rotation's answer first: only then is the store's endpoint the rotated one.
      await page.getByText(/Its new public key: whpk_/).waitFor();
      const rotated = await host().keyhook.webhooks.get(tenantId, webhook.id);
      expect(rotated.publicKey).not.toBe(webhook.publicKey);
      await page.getByText(`Its new public key: ${rotated.publicKey}`).waitFor();
      expect(await page.getByLabel('Signing secret', { exact: true }).count()).toBe(0);
      await expect.poll(() => fact(page, 'Public key (ed25519)'), SETTLES).toBe(rotated.publicKey);
    },
  );

  it.runIf(runs)('refuses a used link and an expired one in plain words', async () => {
    const { context, link: used } = await signIn();
    const again = await context.newPage();
    await again.goto(`${host().base}/api/v1/portal#token=${used}`);
    await again.getByRole('heading', { name: 'This link does not open the portal' }).waitFor();
    expect(await again.getByRole('main').innerText()).toContain('This link was already used.');
    await expectAccessible(again, 'the used-link page');

    const link = await host().keyhook.portal.createSession({
      tenantId: 'acme_e2e_expired',
      permissions: ALL,
      expiresIn: 60,
    });
    host().clock.skewMs = 61_000;
    try {
      await again.goto(`${host().base}${link.url}`);
      await again.getByText('This link has expired.').waitFor();
    } finally {
      host().clock.skewMs = 0;
    }
  });
});
