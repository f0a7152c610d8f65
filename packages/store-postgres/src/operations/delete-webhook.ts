import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // First the webhook: its row lock waits for the publishes that hold it (FOR SHARE), and a
  // publish after it finds no such endpoint.
  delete: `DELETE FROM ${t.webhooks} WHERE tenant_id = $1 AND id = $2`,
  // Then, in a statement that sees what those publishes committed, its deliveries; their attempts
  // go with them (ON DELETE CASCADE, migration 0004). No foreign key does it (migration 0019).
  deleteDeliveries: `DELETE FROM ${t.deliveries} WHERE tenant_id = $1 AND webhook_id = $2`,
});

export async function deleteWebhook(ctx: StoreContext, tenantId: string, id: string): Promise<boolean> {
  // Its deliveries and their attempts go with it: as long as the endpoint's history is.
  const sql = ctx.sql(statements);
  return ctx.transaction(async (client) => {
    await ctx.allowBulk(client);
    const deleted = await ctx.run(client, sql.delete, [tenantId, id], true);
    if (deleted.rowCount !== 1) return false;
    await ctx.run(client, sql.deleteDeliveries, [tenantId, id], true);
    return true;
  });
}
