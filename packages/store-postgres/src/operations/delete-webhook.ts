import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // Its deliveries and their attempts go with it (ON DELETE CASCADE, migration 0004), in this statement.
  delete: `DELETE FROM ${t.webhooks} WHERE tenant_id = $1 AND id = $2`,
});

export async function deleteWebhook(ctx: StoreContext, tenantId: string, id: string): Promise<boolean> {
  // Its deliveries and their attempts go with it: as long as the endpoint's history is.
  const result = await ctx.transaction(async (client) => {
    await ctx.allowBulk(client);
    return ctx.run(client, ctx.sql(statements).delete, [tenantId, id], true);
  });
  return result.rowCount === 1;
}
