import { mergeConfig } from 'vitest/config';
import shared from '../../vitest.shared';

export default mergeConfig(shared, {
  // Says once, before any file runs, when the browser suites are skipped (no Chromium here).
  test: { globalSetup: ['./test/browser-setup.ts'] },
});
