import { configDefaults, defineConfig, mergeConfig } from 'vitest/config';
import { withPostgres } from '../../vitest.shared';

export default mergeConfig(
  withPostgres,
  defineConfig({
    test: {
      // Builds dist/main.js once, for the test that runs the real process.
      globalSetup: ['test/global-setup.ts'],
      // Restarting the PostgreSQL cluster would break every other test using it: that file runs
      // alone, in its own CI step (.ci/run), when KEYHOOK_PG_RESTART_TEST=1.
      exclude: [
        ...configDefaults.exclude,
        ...(process.env['KEYHOOK_PG_RESTART_TEST'] === '1' ? [] : ['test/delivery-pg-restart.test.ts']),
      ],
    },
  }),
);
