import { isKeyhookError } from '@keyhook/core';
import type pg from 'pg';
import { checkOut } from '../src/checkout.js';

/** Settles the promise and tells how long it took, its error (null when it resolved), and whether that is `unavailable`. */
export async function outcome(
  promise: Promise<unknown>,
): Promise<{ unavailable: boolean; ms: number; error: unknown }> {
  const started = performance.now();
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  return {
    unavailable: isKeyhookError(error) && error.code === 'unavailable',
    ms: performance.now() - started,
    error,
  };
}

/**
 * Holds the row lock of key `id` on a connection of `pool`, inside a transaction, until
 * `release()` rolls it back and gives the connection back (twice is once).
 */
export async function lockKeyRow(
  pool: pg.Pool,
  schema: string,
  id: string,
): Promise<{ release(): Promise<void> }> {
  const locker = await checkOut(pool);
  let held = true;
  const release = async () => {
    if (!held) return;
    held = false;
    await locker.query('ROLLBACK').catch(() => {});
    locker.release();
  };
  try {
    await locker.query('BEGIN');
    await locker.query(`SELECT 1 FROM "${schema}".api_keys WHERE id = $1 FOR UPDATE`, [id]);
  } catch (error) {
    await release();
    throw error;
  }
  return { release };
}
