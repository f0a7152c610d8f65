import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // Every tenant's, through the expires_at index.
  purge: `DELETE FROM ${t.idempotencyKeys} WHERE expires_at <= $1`,
});

export async function purgeIdempotencyKeys(ctx: StoreContext, now: Date): Promise<number> {
  const result = await ctx.query(ctx.sql(statements).purge, [now]);
  return result.rowCount ?? 0;
}
