-- The events feed (docs/decisions.md §8.17). An event's place is (feed_xid, feed_seq): the id of
-- the transaction that wrote it, then a sequence number. The feed reads, in that order, only rows
-- whose feed_xid is below its snapshot's xmin: every transaction below that horizon has ended, so
-- no row can later appear before a place already read, though ids and sequence values are not
-- taken in commit order. A test event takes no sequence number: it is not in the feed.
-- The runner sets search_path to the store's schema.

-- A volatile default is evaluated for each existing row: they all take this migration's
-- transaction id, below every later writer's, so they come first.
ALTER TABLE keyhook_events ADD COLUMN feed_xid xid8 NOT NULL DEFAULT pg_current_xact_id();

CREATE SEQUENCE keyhook_events_feed_seq AS bigint;
ALTER TABLE keyhook_events ADD COLUMN feed_seq bigint;
ALTER SEQUENCE keyhook_events_feed_seq OWNED BY keyhook_events.feed_seq;

-- Events written before this migration take places by age, then tenant and id. Test events among
-- them cannot be told apart from the others and are in the feed.
UPDATE keyhook_events AS e SET feed_seq = ordered.position
FROM (
  SELECT tenant_id, id, row_number() OVER (ORDER BY created_at, tenant_id, id) AS position
  FROM keyhook_events
) AS ordered
WHERE e.tenant_id = ordered.tenant_id AND e.id = ordered.id;
SELECT setval('keyhook_events_feed_seq', coalesce((SELECT max(feed_seq) FROM keyhook_events), 0) + 1, false);

-- Every publish takes the next number; the test event insert writes NULL in its place.
ALTER TABLE keyhook_events ALTER COLUMN feed_seq SET DEFAULT nextval('keyhook_events_feed_seq');

-- A tenant's feed, in order from a place, all types or one: tenant first.
CREATE INDEX keyhook_events_feed_idx ON keyhook_events (tenant_id, feed_xid, feed_seq)
  WHERE feed_seq IS NOT NULL;
CREATE INDEX keyhook_events_feed_type_idx ON keyhook_events (tenant_id, type, feed_xid, feed_seq)
  WHERE feed_seq IS NOT NULL;
