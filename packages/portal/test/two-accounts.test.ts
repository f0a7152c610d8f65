import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, expect, it } from 'vitest';
import { expectAccessible, fromPage } from './page-helpers.js';
import { ALL, onEachStack, SCREENSHOTS } from './portal-hosts.js';

/*
 * Two accounts' links in one browser (docs/decisions.md §22.14): a link of another account asks
 * before it switches, naming both; a tab of the session it replaced says so and stops answering
 * from the new one; the header names the account. Each case opens its own browser context, so
 * one failure leaves the next case a clean browser.
 */

const FIRST = 'tenant_first';
const SECOND = 'tenant_second';

onEachStack('two accounts in one browser', ({ runs, host, browser }) => {
  let context: BrowserContext | undefined;
  const openContext = async () => {
    context = await browser().newContext({ viewport: { width: 1280, height: 860 } });
    return context;
  };
  afterAll(async () => {
    await context?.close();
  });

  /** A new link of `tenantId`'s, opened in `page`. */
  const openLink = async (page: Page, tenantId: string) => {
    const link = await host().keyhook.portal.createSession({ tenantId, permissions: ALL });
    await page.goto(`${host().base}${link.url}`);
  };
  const signedInAs = async (page: Page, tenantId: string) => {
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(await page.getByRole('banner').innerText()).toContain(`Account ${tenantId}`);
  };
  /** A new browser with a first tab signed in to the first account. */
  const firstTab = async () => {
    const browserContext = await openContext();
    const first = await browserContext.newPage();
    await openLink(first, FIRST);
    await signedInAs(first, FIRST);
    return { browserContext, first };
  };
  /** The key names `page`'s session lists, asked by hand as the page would. */
  const tenantOf = async (page: Page) => {
    const reply = await fromPage(page, 'GET', '/session');
    return reply.status === 200
      ? (JSON.parse(reply.text) as { session: { tenantId: string } }).session.tenantId
      : null;
  };

  it.runIf(runs)(
    'asks before a link of another account replaces the open session, naming both; staying keeps it',
    async () => {
      const { browserContext, first } = await firstTab();

      const second = await browserContext.newPage();
      await openLink(second, SECOND);
      const question = second.getByRole('heading', { name: `Switch to account ${SECOND}?` });
      await question.waitFor();
      const words = await second.getByRole('main').innerText();
      expect(words).toContain(`open for account ${FIRST}`);
      expect(words).toContain(`The link you opened is for account ${SECOND}`);
      await expectAccessible(second, 'the switch question');
      await second.screenshot({ path: join(SCREENSHOTS, 'switch-account.png') });
      // Nothing changed while the question stands: the first tab works in its own account.
      expect(await tenantOf(first)).toBe(FIRST);

      await second.getByRole('button', { name: `Stay in ${FIRST}` }).click();
      await signedInAs(second, FIRST);
      expect(await tenantOf(first)).toBe(FIRST);
      // The declined link's session was ended: the second account has none standing.
      expect(await host().keyhook.portal.revokeSessions(SECOND)).toBe(0);
      await browserContext.close();
    },
  );

  it.runIf(runs)(
    'switches when asked to; the tab of the replaced session says so and answers nothing of the new one',
    async () => {
      const { browserContext, first } = await firstTab();

      const second = await browserContext.newPage();
      await openLink(second, SECOND);
      await second.getByRole('button', { name: `Switch to ${SECOND}` }).click();
      await signedInAs(second, SECOND);

      // The first tab hears of it at once, and shows no page of the second account's.
      await first.getByRole('heading', { name: 'This browser switched to another session' }).waitFor();
      expect(await first.getByRole('main').innerText()).not.toContain(SECOND);
      await expectAccessible(first, 'the replaced-session page');
      await first.getByRole('button', { name: 'Reload to continue' }).click();
      await signedInAs(first, SECOND);
      await browserContext.close();
    },
  );

  it.runIf(runs)(
    'a tab that missed the news is refused at its next request, not answered from the new session',
    async () => {
      const { browserContext, first } = await firstTab();
      // Another session becomes the browser's behind the tab's back: no tab announces it.
      const link = await host().keyhook.portal.createSession({ tenantId: SECOND, permissions: ALL });
      const exchanged = await fromPage(first, 'POST', '/exchange', { token: link.token });
      expect(exchanged.status).toBe(200);
      await first.getByRole('link', { name: 'Webhooks' }).click();
      await first.getByRole('heading', { name: 'This browser switched to another session' }).waitFor();
      expect(await first.getByRole('main').innerText()).not.toContain(SECOND);
      await browserContext.close();
    },
  );

  it.runIf(runs)("shows a key beyond the session's scopes without actions", async () => {
    await host().keyhook.keys.create(FIRST, {
      name: 'Host wide key',
      scopes: ['items:read', 'items:write'],
    });
    await host().keyhook.keys.create(FIRST, { name: 'Narrow key', scopes: ['items:read'] });
    const browserContext = await openContext();
    const page = await browserContext.newPage();
    const link = await host().keyhook.portal.createSession({
      tenantId: FIRST,
      permissions: ALL,
      scopes: ['items:read'],
    });
    await page.goto(`${host().base}${link.url}`);
    await signedInAs(page, FIRST);
    const wide = page.getByRole('row', { name: /Host wide key/ });
    expect(await wide.innerText()).toContain('Beyond this session’s scopes');
    expect(await wide.getByRole('button', { name: /Rotate|Revoke|Rate limit/ }).count()).toBe(0);
    const narrow = page.getByRole('row', { name: /Narrow key/ });
    expect(await narrow.getByRole('button', { name: /Revoke/ }).count()).toBe(1);
    await expectAccessible(page, 'the keys page with a key beyond the scopes');
    await browserContext.close();
  });

  it.runIf(runs)('a link of the same account needs no question', async () => {
    const browserContext = await openContext();
    const page = await browserContext.newPage();
    await openLink(page, FIRST);
    await signedInAs(page, FIRST);
    await openLink(page, FIRST);
    await signedInAs(page, FIRST);
    expect(await page.getByRole('heading', { name: /^Switch to/ }).count()).toBe(0);
    await browserContext.close();
  });
});
