-- Telemetry (core's README, "Metrics" and "Traces").
--
-- An event's trace context: the W3C traceparent of the span that was active where it was
-- published, or NULL. Each attempt's span links to it; with telemetry.traceparent on and no
-- tracer recording keyhook's spans, it is the traceparent a delivery carries.
ALTER TABLE keyhook_events ADD COLUMN trace_context TEXT;

-- The queue-depth gauge (store.countQueuedDeliveries) counts queued deliveries by status and due
-- time on every collection. The due index had the due time but not the status, so the count
-- read every queued row from the table. With the status as its last column the count reads the
-- index alone. The lease reads the same entries in the same (due_at, id) order: its plan and its
-- name (INDEXED BY in src/delivery-statements.ts) are unchanged, and every write that moves a
-- delivery between states rewrote its entry already, since each one changes due_at too. Like
-- every migration, it runs under the write lock; readers of a WAL database go on meanwhile.
DROP INDEX keyhook_deliveries_due;
CREATE INDEX keyhook_deliveries_due ON keyhook_deliveries (due_at, id, status) WHERE due_at IS NOT NULL;
