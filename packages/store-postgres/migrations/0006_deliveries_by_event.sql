-- keyhook_deliveries_event_idx (0005) led with tenant_id. On a table the planner has no fresh
-- statistics for (a new schema, or one that grew since autovacuum last analysed it), a lookup by
-- delivery id and tenant could go through it instead of the primary key, and read every delivery
-- of the tenant. With the event id first it serves only what it is for: the deliveries of one
-- event, which the foreign key from keyhook_events looks up when an event is deleted.
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
DROP INDEX keyhook_deliveries_event_idx;
CREATE INDEX keyhook_deliveries_event_id_idx ON keyhook_deliveries (event_id, tenant_id);
