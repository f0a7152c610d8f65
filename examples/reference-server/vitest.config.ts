import { defineConfig, mergeConfig } from 'vitest/config';
import shared from '../../vitest.shared';

export default mergeConfig(
  shared,
  defineConfig({
    test: {
      // Builds dist/main.js once, for the test that runs the real process.
      globalSetup: ['test/global-setup.ts'],
    },
  }),
);
