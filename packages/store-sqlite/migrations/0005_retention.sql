-- Retention (store.purgeFinishedDeliveries): two indexes, so that deleting old rows in small
-- batches reads only what it deletes.
--
-- Finished deliveries by the time they finished. "Finished" is written as the checks of 0004
-- define succeeded and failed, without an IN list (0004 explains why): no due time, not held.
CREATE INDEX keyhook_deliveries_finished ON keyhook_deliveries (updated_at)
  WHERE due_at IS NULL AND held_since IS NULL;

-- A delivery's event. Deleting an event makes the foreign key look for deliveries that still
-- refer to it; without this index each such look would read the whole table.
CREATE INDEX keyhook_deliveries_event ON keyhook_deliveries (tenant_id, event_id);

-- Events by age, for those left without deliveries.
CREATE INDEX keyhook_events_created_at ON keyhook_events (created_at);
