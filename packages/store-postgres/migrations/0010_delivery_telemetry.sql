-- Telemetry (core's README, "Metrics" and "Traces").
--
-- An event's trace context: the W3C traceparent of the span that was active where it was
-- published, or NULL. Each attempt's span links to it; it is never sent as is.
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
ALTER TABLE keyhook_events ADD COLUMN trace_context text;

-- The queue-depth gauge (store.countQueuedDeliveries) counts queued deliveries by status and due
-- time on every collection. The due index had the due time but not the status, so the count
-- read every queued row from the table. With the status included, it can be answered from the
-- index (an index-only scan where the visibility map allows). The lease reads the same entries in
-- the same (due_at, id) order. The index is rebuilt in this migration's transaction, which holds
-- writes to keyhook_deliveries for as long as the build of an index over the queued rows takes.
DROP INDEX keyhook_deliveries_due_idx;
CREATE INDEX keyhook_deliveries_due_idx ON keyhook_deliveries (due_at, id) INCLUDE (status)
  WHERE status IN ('pending', 'retry_scheduled', 'in_flight');
