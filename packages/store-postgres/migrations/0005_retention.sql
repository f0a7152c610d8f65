-- Retention (store.purgeFinishedDeliveries, src/delivery-statements.ts): three indexes, so that
-- deleting old rows in small batches reads only what it deletes.
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.

-- Finished deliveries by the time they finished, oldest first.
CREATE INDEX keyhook_deliveries_finished_idx ON keyhook_deliveries (updated_at)
  WHERE status IN ('succeeded', 'failed');

-- A delivery's event. Deleting an event makes the foreign key look for deliveries that still
-- refer to it; without this index each such look would read the whole table.
CREATE INDEX keyhook_deliveries_event_idx ON keyhook_deliveries (tenant_id, event_id);

-- Events by age, for those left without deliveries.
CREATE INDEX keyhook_events_created_at_idx ON keyhook_events (created_at);
