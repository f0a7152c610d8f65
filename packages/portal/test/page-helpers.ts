import { seriousViolations } from '@keyhook/testing/browser';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

/* What the browser suites do in a page: move by keyboard, send by hand, read and scan. */

/**
 * The focused element's name: its aria-label, its label's text, or its own text. Source text,
 * evaluated in the page, because these tests' types are Node's, without the DOM's.
 */
const FOCUSED_NAME = `(() => {
  const element = document.activeElement;
  if (!element || element === document.body) return '';
  const label = element.id ? document.querySelector('label[for="' + element.id + '"]') : null;
  return (element.getAttribute('aria-label') ?? label?.textContent ?? element.textContent ?? '').trim();
})()`;

/** Tabs forward until the focused element's accessible name is `name`: the keyboard-only path to it. */
export async function tabTo(page: Page, name: string | RegExp, limit = 60): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate<string>(FOCUSED_NAME);
    if (typeof name === 'string' ? focused === name : name.test(focused)) return;
  }
  throw new Error(`no element named ${name} within ${limit} tabs`);
}

/** A request the page itself makes, with its cookie: what a customer could send by hand. */
export function fromPage(page: Page, method: string, path: string, body?: unknown, csrfToken?: string) {
  return page.evaluate(
    async ({ method, path, body, csrfToken }) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (csrfToken) headers['x-csrf-token'] = csrfToken;
      const reply = await fetch(`/api/v1/portal/api${path}`, {
        method,
        headers,
        credentials: 'same-origin',
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      return { status: reply.status, text: await reply.text() };
    },
    { method, path, body, csrfToken },
  );
}

/** The endpoint page's fact under `term`, as shown. */
export async function fact(page: Page, term: string): Promise<string> {
  const value = page.locator('dl.facts dt', { hasText: term }).locator('xpath=following-sibling::dd[1]');
  return (await value.innerText()).trim();
}

export async function expectAccessible(page: Page, where: string): Promise<void> {
  expect(await seriousViolations(page), where).toEqual([]);
}
