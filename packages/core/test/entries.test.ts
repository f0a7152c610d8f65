import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// The built entries, as an installed package loads them (the tests' alias points at src).
const dist = (file: string) => new URL(`../dist/${file}`, import.meta.url).href;
const require = createRequire(import.meta.url);

describe('the two entries, as built', () => {
  it('share one KeyhookError: what a store throws is the root’s, in ESM and in CJS', async () => {
    const root = await import(dist('index.js'));
    const store = await import(dist('store.js'));
    expect(store).not.toHaveProperty('KeyhookError');
    const thrown = store.unavailableError('The database is out of reach.');
    expect(thrown).toBeInstanceOf(root.KeyhookError);
    expect(thrown).toMatchObject({ code: 'unavailable', status: 503, retryAfter: 1 });
    const rootCjs = require('../dist/index.cjs');
    const storeCjs = require('../dist/store.cjs');
    expect(storeCjs.unavailableError('out of reach')).toBeInstanceOf(rootCjs.KeyhookError);
  });

  it('keep internals out of the root: a store helper or an inner step is not there', async () => {
    const root = await import(dist('index.js'));
    for (const internal of [
      'newDeliveryRecord',
      'leasedSubscribers',
      'judgeAttempt',
      'hashApiKey',
      'SecretBox',
    ])
      expect(root).not.toHaveProperty(internal);
    const store = await import(dist('store.js'));
    expect(typeof store.newDeliveryRecord).toBe('function');
    expect(store).not.toHaveProperty('createKeyhook');
  });
});

describe('the stores build on @keyhook/core/store alone', () => {
  for (const pkg of ['store-sqlite', 'store-postgres']) {
    it(`${pkg}'s sources import nothing else from core`, () => {
      const dir = new URL(`../../${pkg}/src/`, import.meta.url);
      const specifiers = readdirSync(dir)
        .filter((file) => file.endsWith('.ts'))
        .flatMap((file) =>
          [...readFileSync(new URL(file, dir), 'utf8').matchAll(/from '(@keyhook\/core[^']*)'/g)].map(
            (match) => match[1],
          ),
        );
      expect(specifiers.length).toBeGreaterThan(0);
      expect(new Set(specifiers)).toEqual(new Set(['@keyhook/core/store']));
    });
  }
});
