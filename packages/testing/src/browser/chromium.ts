import { existsSync } from 'node:fs';
import { type Browser, chromium, type LaunchOptions } from 'playwright-core';
import { describe, it } from 'vitest';

/** Debian's Chromium (`apt-get install chromium`); `KEYHOOK_CHROMIUM` names another. No browser is downloaded. */
export const CHROMIUM_PATH = process.env['KEYHOOK_CHROMIUM'] ?? '/usr/bin/chromium';

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

let told = false;

/**
 * `describe` for a suite that drives Chromium. Without Chromium, the suite is skipped locally
 * with one line that says so; under `CI=true` a missing Chromium is a failing test instead.
 */
export function describeInBrowser(name: string, suite: () => void): void {
  if (existsSync(CHROMIUM_PATH)) {
    describe(name, suite);
    return;
  }
  if (process.env['CI'] === 'true') {
    describe(name, () => {
      it('has Chromium to run in', () => {
        throw new Error(
          `Chromium is not installed at ${CHROMIUM_PATH} (apt-get install chromium); CI must run the browser suites`,
        );
      });
    });
    return;
  }
  if (!told) {
    told = true;
    console.warn(
      `Chromium is not installed at ${CHROMIUM_PATH}: skipping the browser suites (apt-get install chromium).`,
    );
  }
  describe.skip(name, suite);
}
