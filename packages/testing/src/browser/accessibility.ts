import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AccessibilityViolation {
  id: string;
  impact: string;
  help: string;
  /** CSS selectors of the elements that fail the rule. */
  targets: string[];
}

/**
 * axe-core's serious and critical violations on the page as it stands, WCAG 2.x A and AA rules.
 * axe is evaluated through the DevTools protocol, which the page's Content-Security-Policy does
 * not govern, so the page is scanned under its real policy.
 */
export async function seriousViolations(page: Page): Promise<AccessibilityViolation[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (
      globalThis as unknown as {
        axe: { run(context: unknown, options: unknown): Promise<{ violations: unknown[] }> };
      }
    ).axe;
    const result = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
    });
    return result.violations as { id: string; impact: string; help: string; nodes: { target: string[] }[] }[];
  });
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(({ id, impact, help, nodes }) => ({
      id,
      impact,
      help,
      targets: nodes.flatMap((node) => node.target),
    }));
}
