import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectAccessible } from './page-helpers.js';
import { ALL, onEachStack, SCREENSHOTS } from './portal-hosts.js';

/*
 * A phone-sized screen (issue 44, item 10): at 375 px no page scrolls sideways, long names wrap,
 * and tables scroll inside themselves. Each page is scanned with axe-core at that width, and
 * screenshotted (the README shows them with KEYHOOK_UPDATE_SCREENSHOTS=1).
 */

const PHONE = { width: 375, height: 812 };
const LONG_NAME = 'x'.repeat(200);

/** How far the page reaches sideways, and the elements that reach past the screen, for the message. */
const OVERFLOW = `(() => {
  const width = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('body *')]
    .filter((element) => element.getBoundingClientRect().right > width + 0.5)
    .filter((element) => !element.closest('.table-wrap, pre, .code-block'))
    .slice(0, 5)
    .map((element) => element.tagName.toLowerCase() + (element.className ? '.' + String(element.className).split(' ').join('.') : ''));
  return { scrollWidth: document.documentElement.scrollWidth, width, wide };
})()`;

onEachStack('the portal on a phone-sized screen', ({ runs, host, browser }) => {
  let context: BrowserContext;
  let page: Page;
  const tenantId = 'tenant_phone';
  let webhookId = '';
  let deliveryId = '';
  beforeAll(async () => {
    if (!runs) return;
    await host().keyhook.keys.create(tenantId, { name: LONG_NAME, scopes: ['items:read', 'items:write'] });
    await host().keyhook.keys.create(tenantId, { name: 'Deploy bot', scopes: ['items:read'] });
    const { webhook } = await host().keyhook.webhooks.create(tenantId, {
      url: `http://127.0.0.1:9/${'long-path-segment/'.repeat(8)}hooks`,
      events: ['item.created', 'item.deleted'],
      description: `An endpoint whose description is one long word: ${'y'.repeat(120)}`,
    });
    webhookId = webhook.id;
    await host().keyhook.webhooks.update(tenantId, webhook.id, { status: 'disabled' });
    const published = await host().keyhook.events.publish({
      tenantId,
      type: 'item.created',
      data: { itemId: 'itm_1', name: LONG_NAME },
    });
    deliveryId = published.deliveries[0]!.id;
    context = await browser().newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    page = await context.newPage();
    const link = await host().keyhook.portal.createSession({ tenantId, permissions: ALL });
    await page.goto(`${host().base}${link.url}`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
  });
  afterAll(async () => {
    await context?.close();
  });

  const pages: [string, () => string, string, string | null][] = [
    ['the keys page', () => '#/keys', 'API keys', 'phone-keys.png'],
    ['the endpoints page', () => '#/webhooks', 'Webhook endpoints', null],
    ['an endpoint page', () => `#/webhooks/${webhookId}`, 'Deliveries', 'phone-endpoint.png'],
    ['a delivery page', () => `#/webhooks/${webhookId}/deliveries/${deliveryId}`, 'Attempts', null],
    ['the event catalog', () => '#/catalog', 'Event catalog', null],
  ];
  for (const [what, route, heading, file] of pages) {
    it.runIf(runs)(`${what} does not scroll sideways at 375 px`, async () => {
      await page.goto(`${host().base}/api/v1/portal${route()}`);
      await page.getByRole('heading', { name: heading, exact: true }).first().waitFor();
      const measured = await page.evaluate<{ scrollWidth: number; width: number; wide: string[] }>(OVERFLOW);
      expect(measured.scrollWidth, `${what}: ${measured.wide.join(', ')}`).toBeLessThanOrEqual(
        measured.width,
      );
      await expectAccessible(page, `${what} at 375 px`);
      // The README shows two of them.
      if (file) await page.screenshot({ path: join(SCREENSHOTS, file), fullPage: true });
    });
  }
});
