import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { keyhookRouter, portalRouter } from '@keyhook/adapter-express';
import { createKeyhook, MemoryStore, type PortalPermission, silentLogger } from '@keyhook/core';
import { describeInBrowser, launchChromium, seriousViolations } from '@keyhook/testing/browser';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import express from 'express';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { keyhookPortal } from '../src/index.js';

/*
 * The portal as a customer uses it: Express serves keyhook with the portal, Chromium opens a
 * link that keyhook.portal minted, and the test acts through roles and labels only. axe-core
 * scans each page under the page's own CSP.
 */
const TENANT = 'tenant_portal';
const keyhook = createKeyhook({
  scopes: [
    { name: 'invoices:read', description: 'Read invoices' },
    { name: 'invoices:write', description: 'Create and pay invoices' },
  ],
  eventCatalog: { 'invoice.paid': { description: 'An invoice was paid in full.' } },
  store: new MemoryStore(),
  adminSession: { secret: TEST_ADMIN_SECRET },
  encryptionKey: TEST_ENCRYPTION_KEY,
  logger: silentLogger,
  mode: 'development',
});

const EVERY_PERMISSION: PortalPermission[] = ['keys:read', 'keys:write', 'webhooks:read', 'webhooks:write'];

let server: Server;
let base: string;
let browser: Browser;
/** A page of the host's dashboard, on another site (localhost, not 127.0.0.1), that frames the portal. */
let dashboard: Server;

beforeAll(async () => {
  const app = express();
  const portal = keyhookPortal(keyhook, {
    brand: { name: 'Acme & Co' },
    frameAncestors: ["'self'", 'http://localhost:*'],
  });
  app.use(keyhookRouter(keyhook, { portal }));
  // The same portal in the dark theme, with a light accent, at a path of its own.
  const dark = keyhookPortal(keyhook, {
    brand: { name: 'Acme Dark', theme: 'dark', accentColor: '#f5c400' },
  });
  app.use('/dark-portal', portalRouter(dark));
  server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const host = express();
  host.get('/dashboard', async (_req, res) => {
    const link = await keyhook.portal.createSession({ tenantId: TENANT, permissions: EVERY_PERMISSION });
    res
      .type('html')
      .send(
        `<!doctype html><title>Dashboard</title><iframe title="Developer portal" src="${base}${link.url}" width="1000" height="700"></iframe>`,
      );
  });
  dashboard = await new Promise<Server>((resolve) => {
    const listening = host.listen(0, '127.0.0.1', () => resolve(listening));
  });
});

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await new Promise<void>((resolve) => dashboard?.close(() => resolve()));
});

async function openLink(page: Page, permissions: PortalPermission[] = EVERY_PERMISSION) {
  const link = await keyhook.portal.createSession({ tenantId: TENANT, permissions });
  await page.goto(`${base}${link.url}`);
  return link;
}

describeInBrowser('the portal in Chromium', () => {
  beforeAll(async () => {
    browser = await launchChromium();
  });

  it('opens from a link, drops the token from the address, and creates a key whose secret is shown once', async () => {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) errors.push(message.text());
    });
    await openLink(page);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(new URL(page.url()).hash).toBe('#/keys');
    expect(await page.title()).toBe('API keys · Acme & Co');
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Name').fill('CI deploys');
    await page.getByRole('checkbox', { name: 'invoices:read' }).check();
    await page.getByRole('dialog').getByRole('button', { name: 'Create key' }).click();
    const secret = await page.getByLabel('API key', { exact: true }).inputValue();
    expect(secret).toMatch(/^sk_live_/);
    const verified = await keyhook.keys.verify(secret);
    expect(verified).toMatchObject({ tenantId: TENANT, scopes: ['invoices:read'] });
    await page.keyboard.press('Escape');
    await page.getByRole('row', { name: /CI deploys/ }).waitFor();
    expect(await page.getByRole('status').first().innerText()).toBe('Key “CI deploys” created.');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('shows the URL policy’s refusal beside the URL field, then adds the endpoint', async () => {
    const page = await browser.newPage();
    await openLink(page);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByLabel('Endpoint URL').fill('ftp://files.example/hook');
    await page.getByRole('checkbox', { name: 'invoice.paid' }).check();
    await page.getByRole('dialog').getByRole('button', { name: 'Add endpoint' }).click();
    const url = page.getByLabel('Endpoint URL');
    await expect.poll(() => url.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await url.getAttribute('aria-describedby'))!.split(' ');
    const fieldError = await page.locator(`[id="${describedBy[describedBy.length - 1]}"]`).innerText();
    expect(fieldError.length).toBeGreaterThan(0);
    expect(await seriousViolations(page)).toEqual([]);

    await url.fill('http://127.0.0.1:9/hooks');
    await page.getByRole('dialog').getByRole('button', { name: 'Add endpoint' }).click();
    expect(await page.getByLabel('Signing secret', { exact: true }).inputValue()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('link', { name: 'http://127.0.0.1:9/hooks' }).click();
    await page.getByRole('heading', { name: 'Deliveries', exact: true }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('refuses a used link in plain words, and ends the session on sign-out', async () => {
    const page = await browser.newPage();
    const link = await openLink(page, ['webhooks:read']);
    await page.getByRole('heading', { name: 'Webhook endpoints' }).waitFor();
    // No keys permission: no keys page offered.
    expect(await page.getByRole('link', { name: 'API keys' }).count()).toBe(0);

    const again = await browser.newPage();
    await again.goto(`${base}${link.url}`);
    await again.getByRole('heading', { name: 'This link does not open the portal' }).waitFor();
    const main = await again.getByRole('main').innerText();
    expect(main).toContain('This link was already used.');
    expect(main).toContain('Ask for a new link from Acme & Co.');
    expect(new URL(again.url()).hash).toBe('');
    expect(await seriousViolations(again)).toEqual([]);
    await again.close();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Your session has ended' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Your session has ended' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it('works inside a cross-site iframe with third-party cookies blocked: the session token stays in memory', async () => {
    const blocking = await launchChromium({ blockThirdPartyCookies: true });
    try {
      const page = await blocking.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      await page.goto(`http://localhost:${(dashboard.address() as AddressInfo).port}/dashboard`);
      const frame = page.frameLocator('iframe[title="Developer portal"]');
      await frame.getByRole('heading', { name: 'API keys' }).waitFor();
      await frame.getByRole('button', { name: 'Create key' }).click();
      await frame.getByLabel('Name').fill('Framed key');
      await frame.getByRole('checkbox', { name: 'invoices:write' }).check();
      await frame.getByRole('dialog').getByRole('button', { name: 'Create key' }).click();
      expect(await frame.getByLabel('API key', { exact: true }).inputValue()).toMatch(/^sk_live_/);
      // Here a framed page may not even read localStorage: an app that tried would have thrown.
      expect(errors).toEqual([]);
      expect(await page.context().cookies(base)).toEqual([]);
    } finally {
      await blocking.close();
    }
  });

  it("pages through a long list, and shows dates in the viewer's time zone", async () => {
    const tenantId = 'tenant_with_many_keys';
    for (let i = 1; i <= 23; i++) {
      await keyhook.keys.create(tenantId, {
        name: `key ${String(i).padStart(2, '0')}`,
        scopes: ['invoices:read'],
      });
    }
    const zone = 'Pacific/Chatham'; // UTC+13:45: no machine's own zone by accident
    const context = await browser.newContext({ timezoneId: zone, locale: 'en-GB' });
    try {
      const page = await context.newPage();
      const link = await keyhook.portal.createSession({ tenantId, permissions: ['keys:read'] });
      await page.goto(`${base}${link.url}`);
      // Keys made in one millisecond have no order among them: the pages are checked as sets.
      const names = page.getByRole('table').getByRole('row').locator('th[scope="row"]');
      const pages = page.getByRole('navigation', { name: 'API key pages' });
      await expect.poll(() => names.count()).toBe(20);
      const first = await names.allInnerTexts();
      await pages.getByRole('button', { name: 'Next page' }).click();
      await expect.poll(() => names.count()).toBe(3);
      const second = await names.allInnerTexts();
      expect(new Set([...first, ...second]).size).toBe(23);
      expect(await pages.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
      await pages.getByRole('button', { name: 'Previous page' }).click();
      await expect.poll(() => names.count()).toBe(20);

      const [newest] = await keyhook.keys.list(tenantId, 1);
      const shown = new Intl.DateTimeFormat('en-GB', {
        dateStyle: 'medium',
        timeStyle: 'short',
        timeZone: zone,
      });
      const row = page.getByRole('row', { name: new RegExp(newest!.name) });
      expect(await row.innerText()).toContain(shown.format(newest!.createdAt));
      expect(await seriousViolations(page)).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('reads as well in the dark theme with a light accent', async () => {
    const page = await browser.newPage();
    const link = await keyhook.portal.createSession({ tenantId: TENANT, permissions: EVERY_PERMISSION });
    await page.goto(`${base}/dark-portal/#token=${link.token}`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(await page.locator('html').getAttribute('data-theme')).toBe('dark');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press('Escape');
    for (const name of ['Webhooks', 'Event catalog']) {
      await page.getByRole('link', { name }).click();
      await page.getByRole('heading', { level: 1 }).waitFor();
      expect(await seriousViolations(page), name).toEqual([]);
    }
    await page.close();
  });
});
