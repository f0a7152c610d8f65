-- Bulk recovery of failed deliveries (store.recoverFailedDeliveries): one webhook's failed
-- deliveries created in a window, oldest first (created_at, then id), a small batch at a time.
--
-- No index served it: keyhook_deliveries_webhook_id is (webhook_id, id), so each batch read every
-- delivery the webhook ever had, and sorted the failed ones by age, to queue a few hundred. This
-- one holds failed deliveries only, in the order recovery takes them: a batch reads its `limit`
-- entries and stops. Partial on `status = 'failed'` (a comparison, not an IN list: 0004 explains
-- why): a delivery's insert, lease and retries, none of them failed, write nothing to it; only
-- a write that makes one failed adds an entry, and recovery or retention takes it out.
CREATE INDEX keyhook_deliveries_failed ON keyhook_deliveries (webhook_id, created_at, id)
  WHERE status = 'failed';
