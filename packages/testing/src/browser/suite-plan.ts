import { existsSync } from 'node:fs';
import { inCi } from '../support/ci.js';

/** Debian's Chromium (`apt-get install chromium`); `KEYHOOK_CHROMIUM` names another. No browser is downloaded. */
export const CHROMIUM_PATH = process.env['KEYHOOK_CHROMIUM'] ?? '/usr/bin/chromium';

/** What a browser suite does here: run, fail (CI without Chromium), or skip with one line saying why. */
export type BrowserSuitePlan =
  | { action: 'run' }
  | { action: 'fail'; message: string }
  | { action: 'skip'; message: string };

export function browserSuitePlan(
  chromiumPath: string,
  env: Record<string, string | undefined>,
  exists: (path: string) => boolean = existsSync,
): BrowserSuitePlan {
  if (exists(chromiumPath)) return { action: 'run' };
  if (inCi(env)) {
    return {
      action: 'fail',
      message: `Chromium is not installed at ${chromiumPath} (apt-get install chromium); CI must run the browser suites`,
    };
  }
  return {
    action: 'skip',
    message: `Chromium is not installed at ${chromiumPath}: skipping the browser suites (apt-get install chromium).`,
  };
}

/**
 * For a package's vitest `globalSetup`: says once per run, before any file, that the browser
 * suites are skipped and why. The suites themselves skip without a word.
 */
export function announceBrowserSuites(): void {
  const plan = browserSuitePlan(CHROMIUM_PATH, process.env);
  if (plan.action === 'skip') console.warn(plan.message);
}
