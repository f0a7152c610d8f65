import { mergeConfig } from 'vitest/config';
import { withPostgres } from '../../vitest.shared';

export default mergeConfig(withPostgres, {
  // Says once, before any file runs, when the browser suites are skipped (no Chromium here).
  test: { globalSetup: ['./test/browser-setup.ts'] },
});
