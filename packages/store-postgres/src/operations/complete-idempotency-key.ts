import type { IdempotencyCompletion } from '@keyhook/core/store';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // Matching the claim id and state: a claim that was taken over or already completed writes nothing.
  complete: `UPDATE ${t.idempotencyKeys} SET state = 'completed', response_sealed = $4
      WHERE tenant_id = $1 AND key = $2 AND claim_id = $3 AND state = 'in_progress'`,
});

export async function completeIdempotencyKey(
  ctx: StoreContext,
  completion: IdempotencyCompletion,
): Promise<boolean> {
  const result = await ctx.query(ctx.sql(statements).complete, [
    completion.tenantId,
    completion.key,
    completion.claimId,
    completion.responseSealed,
  ]);
  return result.rowCount === 1;
}
