-- A delivery's webhook and event are not foreign keys (docs/decisions.md §20.6): every statement
-- that writes a delivery holds its webhook (FOR SHARE) and writes its event in the same statement
-- or transaction, and deleting a webhook deletes its deliveries itself. The checks cost every
-- publish two trigger queries.
ALTER TABLE keyhook_deliveries DROP CONSTRAINT IF EXISTS keyhook_deliveries_webhook_id_fkey;
ALTER TABLE keyhook_deliveries DROP CONSTRAINT IF EXISTS keyhook_deliveries_tenant_id_event_id_fkey;
