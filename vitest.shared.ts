import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const source = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));

/**
 * Every package's tests run against the other packages' sources, not their builds, so a
 * test never passes on a stale dist.
 */
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@keyhook\/core$/, replacement: source('core') },
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
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
