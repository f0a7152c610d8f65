-- The events feed (docs/decisions.md §8.17): each event's place in the order events were
-- committed. SQLite serialises writers, and a publish takes its place (the highest so far, plus
-- one) under the write lock it commits under, so places are commit order, within a grouped commit
-- too (docs/decisions.md §8.10). A test event takes none: it is not in the feed.
ALTER TABLE keyhook_events ADD COLUMN feed_seq INTEGER;

-- Events written before this migration take places by age, then tenant and id. Test events among
-- them cannot be told apart from the others and are in the feed.
UPDATE keyhook_events SET feed_seq = ordered.position
FROM (
  SELECT tenant_id, id, row_number() OVER (ORDER BY created_at, tenant_id, id) AS position
  FROM keyhook_events
) AS ordered
WHERE keyhook_events.tenant_id = ordered.tenant_id AND keyhook_events.id = ordered.id;

-- The next place: max(feed_seq) reads the last entry of this index. Unique: no two events share a place.
CREATE UNIQUE INDEX keyhook_events_feed_seq ON keyhook_events (feed_seq);

-- A tenant's feed, in order from a place, all types or one: tenant first.
CREATE INDEX keyhook_events_feed ON keyhook_events (tenant_id, feed_seq) WHERE feed_seq IS NOT NULL;
CREATE INDEX keyhook_events_feed_type ON keyhook_events (tenant_id, type, feed_seq)
  WHERE feed_seq IS NOT NULL;
