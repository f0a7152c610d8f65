import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { expectAccessible } from './page-helpers.js';
import { ALL, onEachStack, SCREENSHOTS } from './portal-hosts.js';

/*
 * Finding a delivery (issue 44, item 6): the log narrows by event type, event id and a time
 * range; ids copy with a button; an endpoint carries a description set at create and by edit.
 * Each case makes its own tenant, endpoint and browser context.
 */

onEachStack('finding a delivery in the portal', ({ runs, host, browser }) => {
  let tenantCount = 0;

  const signIn = async (tenantId: string): Promise<{ context: BrowserContext; page: Page }> => {
    const context = await browser().newContext({ viewport: { width: 1280, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: host().base });
    const page = await context.newPage();
    const link = await host().keyhook.portal.createSession({ tenantId, permissions: ALL });
    await page.goto(`${host().base}${link.url}`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    return { context, page };
  };
  /** The event ids the log shows, newest first. */
  const shownEvents = async (page: Page) => {
    const rows = page
      .getByRole('table', { name: 'Deliveries to this endpoint, newest first' })
      .getByRole('row');
    const texts = await rows.allInnerTexts();
    return texts.slice(1).map((text) => /evt_[0-9a-z]+/.exec(text)?.[0]);
  };

  it.runIf(runs)('narrows the log by event type, by event id and by a time range', async () => {
    const tenantId = `tenant_find_${++tenantCount}`;
    // No receiver: a disabled endpoint holds its deliveries, so the log stands still.
    const { webhook } = await host().keyhook.webhooks.create(tenantId, {
      url: 'http://127.0.0.1:9/hooks',
      events: ['item.created', 'item.deleted'],
    });
    await host().keyhook.webhooks.update(tenantId, webhook.id, { status: 'disabled' });
    const created = await host().keyhook.events.publish({
      tenantId,
      type: 'item.created',
      data: { itemId: 'itm_1', name: 'One' },
    });
    const deleted = await host().keyhook.events.publish({
      tenantId,
      type: 'item.deleted',
      data: { itemId: 'itm_1' },
    });
    const { context, page } = await signIn(tenantId);
    await page.goto(`${host().base}/api/v1/portal#/webhooks/${webhook.id}`);
    await page.getByRole('heading', { name: 'Deliveries', exact: true }).waitFor();
    await expect.poll(() => shownEvents(page)).toEqual([deleted.event.id, created.event.id]);

    await page.getByLabel('Events of type').selectOption('item.created');
    await expect.poll(() => shownEvents(page)).toEqual([created.event.id]);
    await page.getByRole('button', { name: 'Show all' }).click();
    await expect.poll(() => shownEvents(page)).toEqual([deleted.event.id, created.event.id]);

    await page.getByLabel('Event ID').fill(deleted.event.id);
    await page.getByRole('button', { name: 'Find' }).click();
    await expect.poll(() => shownEvents(page)).toEqual([deleted.event.id]);
    await expectAccessible(page, 'the delivery log, narrowed');

    // A range that ends before both events finds none, and says so.
    await page.getByLabel('Event ID').fill('');
    await page.getByLabel('Until').fill('2020-01-01T00:00');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByText('No deliveries match.').waitFor();
    await page.getByLabel('From').fill('2020-01-01T00:00');
    await page.getByLabel('Until').fill('2099-01-01T00:00');
    await page.getByRole('button', { name: 'Find' }).click();
    await expect.poll(() => shownEvents(page)).toEqual([deleted.event.id, created.event.id]);
    await page.screenshot({ path: join(SCREENSHOTS, 'delivery-log-filters.png') });
    await context.close();
  });

  it.runIf(runs)("copies a delivery's ids with a button", async () => {
    const tenantId = `tenant_copy_${++tenantCount}`;
    const { webhook } = await host().keyhook.webhooks.create(tenantId, {
      url: 'http://127.0.0.1:9/hooks',
      events: ['item.deleted'],
    });
    await host().keyhook.webhooks.update(tenantId, webhook.id, { status: 'disabled' });
    const published = await host().keyhook.events.publish({
      tenantId,
      type: 'item.deleted',
      data: { itemId: 'itm_9' },
    });
    const delivery = published.deliveries[0]!;
    const { context, page } = await signIn(tenantId);
    await page.goto(`${host().base}/api/v1/portal#/webhooks/${webhook.id}/deliveries/${delivery.id}`);
    await page.getByRole('heading', { name: /^Delivery / }).waitFor();
    const clipboard = () => page.evaluate<string>('navigator.clipboard.readText()');
    await page.getByRole('button', { name: 'Copy event ID' }).click();
    await expect.poll(clipboard).toBe(published.event.id);
    await page.getByRole('button', { name: 'Copy delivery ID' }).click();
    await expect.poll(clipboard).toBe(delivery.id);
    await page.getByText('Copied').first().waitFor();
    await expectAccessible(page, 'the delivery page with copy buttons');
    await context.close();
  });

  it.runIf(runs)('an endpoint takes a description at create and by edit, and shows it', async () => {
    const tenantId = `tenant_describe_${++tenantCount}`;
    const { context, page } = await signIn(tenantId);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const dialog = page.getByRole('dialog');
    // Development: the URL's hint says http:// and loopback are allowed here, and not in production
    // (one such hint: a locator that matched two would throw).
    await dialog.getByText(/In development, http:\/\/ and loopback URLs/).waitFor();
    // Nothing chosen, nothing typed: each field says what it needs, in plain words.
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    await dialog.getByText('Choose at least one event').waitFor();
    await expectAccessible(page, 'the add-endpoint dialog with its field errors');
    await dialog.getByLabel('Endpoint URL').fill('http://127.0.0.1:9/described');
    await dialog.getByLabel('Description (optional)').fill('Billing sync');
    await dialog.getByRole('checkbox', { name: /item\.created/ }).check();
    await dialog.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('button', { name: 'Done' }).click();
    const row = page.getByRole('row', { name: /described/ });
    expect(await row.innerText()).toContain('Billing sync');

    await row.getByRole('link').click();
    await page.getByRole('button', { name: 'Edit endpoint' }).click();
    await page.getByRole('dialog').getByLabel('Description (optional)').fill('Billing sync\u202E, reversed');
    await page.getByRole('dialog').getByRole('button', { name: 'Save changes' }).click();
    // Refused beside the field, as a sentence about it; nothing saved.
    const refusal = page.getByRole('dialog').locator('.field-error');
    await refusal.waitFor();
    expect(await refusal.innerText()).toMatch(/^Description must not contain control characters/);
    await page.getByRole('dialog').getByLabel('Description (optional)').fill('Billing sync, v2');
    await page.getByRole('dialog').getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    const fact = page
      .locator('dl.facts dt', { hasText: 'Description' })
      .locator('xpath=following-sibling::dd[1]');
    await expect.poll(() => fact.innerText()).toBe('Billing sync, v2');
    const [stored] = await host().keyhook.webhooks.list(tenantId, 10);
    expect(stored!.description).toBe('Billing sync, v2');
    await context.close();
  });
});
