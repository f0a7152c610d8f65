import { beforeEach, describe, expect, it, vi } from 'vitest';
import { run } from '../src/program.js';
import { captured } from './support.js';

// The stores, replaced: each test sets what their migrate() and pendingMigrations() throw.
// vi.hoisted, as vi.mock is hoisted above the imports and its factories may only use what is.
const { thrown, failing } = vi.hoisted(() => {
  const thrown = { error: new Error('unset') as unknown };
  return { thrown, failing: () => Promise.reject(thrown.error) };
});
vi.mock('@keyhook/store-sqlite', () => ({ migrate: failing, pendingMigrations: failing }));
vi.mock('@keyhook/store-postgres', () => ({
  DEFAULT_SCHEMA: 'keyhook',
  migrate: failing,
  pendingMigrations: failing,
}));

const SQLITE = ['migrate', '--database', 'keyhook.db'];
const POSTGRES = ['migrate', '--database', 'postgres://u:S3cretPw@db.internal/app'];

describe('keyhook migrate, when the store throws', () => {
  beforeEach(() => {
    thrown.error = new Error('unset');
  });

  it.each([
    {
      what: 'a TypeError that is not an option check is a failure (exit 1), not bad usage',
      error: new TypeError("Cannot read properties of undefined (reading 'prepare')"),
      code: 1,
      stderr: "keyhook migrate: Cannot read properties of undefined (reading 'prepare')\n",
    },
    {
      what: "the store's check of an option the command passes on is bad usage (exit 2)",
      error: new TypeError('Invalid Postgres schema name "x": pg_ is reserved.'),
      code: 2,
      stderr:
        'keyhook migrate: Invalid Postgres schema name "x": pg_ is reserved. (keyhook migrate --help)\n',
      only: [POSTGRES],
    },
    {
      what: 'the password of a URL in an error is scrubbed, with or without //',
      error: new Error('keyhook: no route to postgres:/u:S3cretPw@db.internal/app'),
      code: 1,
      stderr: 'keyhook migrate: no route to postgres:/u:***@db.internal/app\n',
    },
  ])('$what', async ({ error, code, stderr, only }) => {
    thrown.error = error;
    for (const database of only ?? [SQLITE, POSTGRES]) {
      for (const args of [database, [...database, '--dry-run']]) {
        const io = captured();
        await expect(run(args, io)).resolves.toBe(code);
        expect(io.err.join('')).toBe(stderr);
      }
    }
  });
});
