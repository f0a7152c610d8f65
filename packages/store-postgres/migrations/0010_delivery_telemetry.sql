-- Telemetry (core's README, "Metrics" and "Traces").
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
--
-- The queue-depth gauge (store.countQueuedDeliveries) counts queued deliveries by status and due
-- time on each collection. The due index had the due time but not the status, so the count read
-- every queued row from the table. With the status included it is answered from the index (an
-- index-only scan where the visibility map allows). The lease reads the same entries in the same
-- (due_at, id) order.
--
-- Order matters for what waits: the new index is built first, under CREATE INDEX's SHARE lock
-- (reads, leases' reads and other instances go on; writes to keyhook_deliveries wait for the
-- build, which scans the whole table). Only then does the old index go and the new one take its
-- name, and only then does keyhook_events get its column: those three take exclusive locks, held
-- from there until this migration commits, a moment later, not through the build.
CREATE INDEX keyhook_deliveries_due_next_idx ON keyhook_deliveries (due_at, id) INCLUDE (status)
  WHERE status IN ('pending', 'retry_scheduled', 'in_flight');
DROP INDEX keyhook_deliveries_due_idx;
ALTER INDEX keyhook_deliveries_due_next_idx RENAME TO keyhook_deliveries_due_idx;

-- An event's trace context: the W3C traceparent of the span that was active where it was
-- published, or NULL. Each attempt's span links to it; with telemetry.traceparent on and no
-- tracer recording keyhook's spans, it is the traceparent a delivery carries.
ALTER TABLE keyhook_events ADD COLUMN trace_context text;
