import { join } from 'node:path';
import { TestReceiver } from '@keyhook/testing/support';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectAccessible } from './page-helpers.js';
import { ALL, onEachStack, SCREENSHOTS } from './portal-hosts.js';

/*
 * A disabled endpoint says so (issue 44, item 7): a banner on its page and in the list gives the
 * reason and the time, and enables it again. Each case makes its own tenant and endpoint.
 */

onEachStack('a disabled endpoint in the portal', ({ runs, host, browser }) => {
  let receiver: TestReceiver;
  beforeAll(async () => {
    if (!runs) return;
    receiver = await TestReceiver.start();
    receiver.on('/gone', (_request, _index, res) => res.writeHead(410).end('gone'));
    receiver.on('/ok', (_request, _index, res) => res.writeHead(200).end('ok'));
  });
  afterAll(async () => {
    await receiver?.close();
  });

  /** A page of a new session of `tenantId`'s, at `route`. */
  const open = async (tenantId: string, route: string): Promise<Page> => {
    const context = await browser().newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    const link = await host().keyhook.portal.createSession({ tenantId, permissions: ALL });
    await page.goto(`${host().base}${link.url}`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.goto(`${host().base}/api/v1/portal${route}`);
    return page;
  };

  it.runIf(runs)('the list names a disabled endpoint, why and when, and enables it again', async () => {
    const tenant = 'tenant_list';
    const { webhook } = await host().keyhook.webhooks.create(tenant, {
      url: receiver.url('/ok'),
      events: ['item.created'],
    });
    const disabled = await host().keyhook.webhooks.update(tenant, webhook.id, { status: 'disabled' });
    const page = await open(tenant, '#/webhooks');
    const banner = page.getByRole('region', { name: `Endpoint ${webhook.url} is disabled` });
    await banner.waitFor();
    const words = await banner.innerText();
    expect(words).toContain('disabled by hand on');
    expect(words).toContain(String(disabled.disabledAt!.getFullYear()));
    expect(words).toContain('New deliveries are held');
    await expectAccessible(page, 'the endpoints page with a disabled endpoint');
    await page.screenshot({ path: join(SCREENSHOTS, 'endpoint-disabled-list.png') });

    await banner.getByRole('button', { name: /Enable endpoint/ }).click();
    await banner.waitFor({ state: 'detached' });
    expect((await host().keyhook.webhooks.get(tenant, webhook.id)).status).toBe('active');
    await page.context().close();
  });

  it.runIf(runs)('an endpoint whose receiver answered 410 says so on its page, with the time', async () => {
    const tenant = 'tenant_gone';
    const { webhook } = await host().keyhook.webhooks.create(tenant, {
      url: receiver.url('/gone'),
      events: ['item.created'],
    });
    await host().keyhook.events.publish({
      tenantId: tenant,
      type: 'item.created',
      data: { itemId: 'itm_1', name: 'One' },
    });
    const page = await open(tenant, `#/webhooks/${webhook.id}`);
    const banner = page.getByRole('region', { name: `Endpoint ${webhook.url} is disabled` });
    // The worker delivers, the receiver answers 410, the endpoint is disabled; the page shows it once loaded after.
    await expect
      .poll(async () => (await host().keyhook.webhooks.get(tenant, webhook.id)).status, {
        timeout: 15_000,
      })
      .toBe('disabled');
    await page.reload();
    await banner.waitFor();
    expect(await banner.innerText()).toMatch(
      /This endpoint was disabled on .+ because its receiver answered 410 Gone\./,
    );
    await expectAccessible(page, 'the endpoint page, disabled by a 410');
    await page.screenshot({ path: join(SCREENSHOTS, 'endpoint-disabled.png') });
    await page.context().close();
  });

  it.runIf(runs)('a session that may only read sees the banner without the button', async () => {
    const tenant = 'tenant_read';
    const { webhook } = await host().keyhook.webhooks.create(tenant, {
      url: receiver.url('/ok'),
      events: ['item.created'],
    });
    await host().keyhook.webhooks.update(tenant, webhook.id, { status: 'disabled' });
    const context = await browser().newContext({ viewport: { width: 1280, height: 860 } });
    const page = await context.newPage();
    const link = await host().keyhook.portal.createSession({
      tenantId: tenant,
      permissions: ['webhooks:read'],
    });
    await page.goto(`${host().base}${link.url}`);
    const banner = page.getByRole('region', { name: `Endpoint ${webhook.url} is disabled` });
    await banner.waitFor();
    expect(await banner.getByRole('button').count()).toBe(0);
    await context.close();
  });
});
