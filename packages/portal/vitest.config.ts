import { mergeConfig } from 'vitest/config';
import { withPostgres } from '../../vitest.shared';

export default mergeConfig(withPostgres, {
  test: {
    // Says once, before any file runs, when the browser suites are skipped (no Chromium here).
    globalSetup: ['./test/browser-setup.ts'],
    // The browser suites wait on states (a heading, a row, a focused name), each a few round trips
    // to Chromium; on a machine busy with other work those take longer, never forever.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
