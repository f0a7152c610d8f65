import { fileURLToPath } from 'node:url';
import { defineConfig, mergeConfig } from 'vitest/config';

const source = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

/**
 * Every package's tests run against the other packages' sources, not their builds, so a
 * test never passes on a stale dist.
 */
const shared = defineConfig({
  resolve: {
    alias: [
      { find: /^@keyhook\/core$/, replacement: source('core') },
      {
        find: /^@keyhook\/core\/http$/,
        replacement: fileURLToPath(new URL('./packages/core/src/for-http.ts', import.meta.url)),
      },
      {
        find: /^@keyhook\/core\/store$/,
        replacement: fileURLToPath(new URL('./packages/core/src/for-stores.ts', import.meta.url)),
      },
      { find: /^@keyhook\/store-sqlite$/, replacement: source('store-sqlite') },
      { find: /^@keyhook\/store-postgres$/, replacement: source('store-postgres') },
      { find: /^@keyhook\/adapter-express$/, replacement: source('adapter-express') },
      { find: /^@keyhook\/adapter-fastify$/, replacement: source('adapter-fastify') },
      { find: /^@keyhook\/webhook-verify$/, replacement: source('webhook-verify') },
      { find: /^@keyhook\/portal$/, replacement: source('portal') },
      { find: /^@keyhook\/store-conformance$/, replacement: source('store-conformance') },
      {
        find: /^@keyhook\/store-conformance\/support$/,
        replacement: fileURLToPath(
          new URL('./packages/store-conformance/src/support/index.ts', import.meta.url),
        ),
      },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});

export default shared;

/**
 * The config of a package whose tests reach PostgreSQL: a test in which any code checks out a pg
 * client without listening for its errors fails (packages/testing/src/setup/fail-unguarded-checkouts.ts).
 */
export const withPostgres = mergeConfig(shared, {
  test: {
    setupFiles: [
      fileURLToPath(new URL('./packages/testing/src/setup/fail-unguarded-checkouts.ts', import.meta.url)),
    ],
  },
});
