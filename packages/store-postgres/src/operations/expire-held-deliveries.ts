import { transition } from '../shared-statements.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // Schema, not rule: `status = 'held'` here and in countQueuedDeliveries is
  // keyhook_deliveries_held_idx's predicate (0004), which a bound state would not match
  // (docs/decisions.md §10.4).
  expireHeld: transition(
    t,
    `status = 'held' AND held_since <= $1`,
    `status = 'failed', held_since = NULL, updated_at = $2`,
  ),
});

export async function expireHeldDeliveries(ctx: StoreContext, heldBefore: Date, at: Date): Promise<number> {
  const result = await ctx.transaction(async (client) => {
    await ctx.allowBulk(client);
    return ctx.run(client, ctx.sql(statements).expireHeld, [heldBefore, at], true);
  });
  return result.rowCount ?? 0;
}
