import type { Prepare, Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables, prepare: Prepare) => ({
  // A concurrent toucher holding the row lock makes this re-check the new last_used_at and miss.
  // Prepared: it runs on key verifications.
  touch: prepare(`UPDATE ${t.apiKeys} SET last_used_at = $2
      WHERE id = $1
        AND (last_used_at IS NULL
             OR last_used_at <= $2::timestamptz - $3::double precision * interval '1 millisecond')`),
});

export async function touchApiKey(
  ctx: StoreContext,
  id: string,
  at: Date,
  minIntervalMs: number,
): Promise<boolean> {
  const result = await ctx.query(ctx.sql(statements).touch, [id, at, minIntervalMs]);
  return result.rowCount === 1;
}
