import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  release: `DELETE FROM ${t.idempotencyKeys}
      WHERE tenant_id = $1 AND key = $2 AND claim_id = $3 AND state = 'in_progress'`,
});

export async function releaseIdempotencyKey(
  ctx: StoreContext,
  tenantId: string,
  key: string,
  claimId: string,
): Promise<void> {
  await ctx.query(ctx.sql(statements).release, [tenantId, key, claimId]);
}
