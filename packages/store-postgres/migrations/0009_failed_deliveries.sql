-- Bulk recovery of failed deliveries (store.recoverFailedDeliveries, src/delivery-statements.ts):
-- one webhook's failed deliveries created in a window, oldest first (created_at, then id), a
-- small batch at a time.
--
-- No index served it: keyhook_deliveries_webhook_id_id_idx is (webhook_id, id), so each batch
-- read every delivery the webhook ever had and sorted the failed ones by age, to queue a few
-- hundred. This one holds failed deliveries only, in the order recovery takes them: a batch
-- reads its LIMIT entries and stops. Partial on status, as the due and held indexes are (status
-- is in their predicates already, so no update that could be HOT before loses that here): a
-- delivery's insert, lease and retries add nothing to it; only a write that makes one failed
-- adds an entry.
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
CREATE INDEX keyhook_deliveries_failed_idx ON keyhook_deliveries (webhook_id, created_at, id)
  WHERE status = 'failed';
