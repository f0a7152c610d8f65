import type pg from 'pg';

/**
 * Runs `work` in one transaction on one pooled client: COMMIT when it resolves, ROLLBACK when it
 * throws. keyhook's `events.publish(…, { transaction: client })` joins it, so the app's rows and
 * their events are written together or not at all.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackFailure) {
      // A client that cannot even roll back is not given back to the pool for reuse.
      broken = rollbackFailure as Error;
    }
    throw error;
  } finally {
    client.release(broken);
  }
}
