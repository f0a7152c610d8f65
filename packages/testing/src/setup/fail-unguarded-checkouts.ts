/**
 * A vitest setup file for every suite that reaches PostgreSQL (vitest.shared.ts `withPostgres`):
 * a test, or a hook, in which any code checked out a pg client with no 'error' listener fails.
 */
import { afterAll, afterEach } from 'vitest';
import { takeUnguardedCheckouts, watchPgCheckouts } from '../support/pg-checkouts.js';

watchPgCheckouts();

function failOnUnguarded(): void {
  const found = takeUnguardedCheckouts();
  if (found.length === 0) return;
  throw new AggregateError(
    found,
    `${found.length} pg client(s) checked out without an 'error' listener; use checkOut or withTransaction ` +
      `from @keyhook/store-postgres. First at:\n${found[0]!.stack}`,
  );
}

afterEach(failOnUnguarded);
afterAll(failOnUnguarded);
