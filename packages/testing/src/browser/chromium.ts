import { type Browser, chromium, type LaunchOptions } from 'playwright-core';
import { describe, it } from 'vitest';
import { browserSuitePlan, CHROMIUM_PATH } from './suite-plan.js';

/**
 * Flags for a headless Chromium on a machine without a network beyond loopback: without the
 * background-networking ones, Chromium keeps trying to reach Google's hosts.
 */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface ChromiumOptions {
  /** Block third-party cookies, as a browser with the phase-out turned on does. */
  blockThirdPartyCookies?: boolean;
}

export function launchChromium(options: ChromiumOptions = {}): Promise<Browser> {
  const args = [...ARGS];
  if (options.blockThirdPartyCookies) args.push('--test-third-party-cookie-phaseout');
  const launch: LaunchOptions = { executablePath: CHROMIUM_PATH, headless: true, args };
  return chromium.launch(launch);
}

/**
 * `describe` for a suite that drives Chromium. Without Chromium, the suite is skipped locally
 * (`announceBrowserSuites` says so once); under `CI=true` a missing Chromium is a failing test.
 */
export function describeInBrowser(name: string, suite: () => void): void {
  const plan = browserSuitePlan(CHROMIUM_PATH, process.env);
  if (plan.action === 'run') {
    describe(name, suite);
  } else if (plan.action === 'fail') {
    describe(name, () => {
      it('has Chromium to run in', () => {
        throw new Error(plan.message);
      });
    });
  } else {
    describe.skip(name, suite);
  }
}
