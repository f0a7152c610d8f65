import type Database from 'better-sqlite3';

/**
 * The webhook, its deliveries and their attempts go together. The foreign keys would cascade,
 * but only where foreign_keys is on; a caller's own connection may have it off.
 */
export function prepareDeleteWebhook(
  db: Database.Database,
): Database.Transaction<(tenantId: string, id: string) => boolean> {
  const deleteWebhook = db.prepare<[string, string]>(
    'DELETE FROM keyhook_webhooks WHERE tenant_id = ? AND id = ?',
  );
  const deleteAttempts = db.prepare<[string]>(
    `DELETE FROM keyhook_attempts
        WHERE delivery_id IN (SELECT id FROM keyhook_deliveries WHERE webhook_id = ?)`,
  );
  const deleteDeliveries = db.prepare<[string]>('DELETE FROM keyhook_deliveries WHERE webhook_id = ?');
  return db.transaction((tenantId, id) => {
    if (deleteWebhook.run(tenantId, id).changes === 0) return false;
    // Webhook ids are unique across tenants: once the tenant's webhook went, these rows are all its own.
    deleteAttempts.run(id);
    deleteDeliveries.run(id);
    return true;
  });
}

/** Under BEGIN IMMEDIATE: the write lock first. */
export function deleteWebhook(
  transaction: ReturnType<typeof prepareDeleteWebhook>,
  tenantId: string,
  id: string,
): boolean {
  return transaction.immediate(tenantId, id);
}
