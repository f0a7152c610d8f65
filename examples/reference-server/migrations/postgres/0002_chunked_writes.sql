-- Large writes in chunks (README "Large snapshots and applies"): the staged set a source shows is
-- the rows of staging_items whose source_id is the source's item set, so a snapshot written in
-- chunks under a set id of its own becomes visible with one update of this pointer.
-- items_set: the visible set's id; NULL means the source's own id (every set before this migration).
ALTER TABLE staging_sources ADD COLUMN items_set TEXT;
-- The set a chunked snapshot is writing, and when it last wrote a chunk: while it is fresh, other
-- item writes on the source wait; a stale one (its writer died) is taken over and its rows dropped.
ALTER TABLE staging_sources ADD COLUMN pending_set TEXT;
ALTER TABLE staging_sources ADD COLUMN pending_at BIGINT;
-- Whether a set is in use (dropUnusedSet, the sweep of unreachable sets) is one index seek on
-- each pointer, not a scan of every source; most sources have no pending set.
CREATE INDEX staging_sources_items_set ON staging_sources (items_set) WHERE items_set IS NOT NULL;
CREATE INDEX staging_sources_pending_set ON staging_sources (pending_set) WHERE pending_set IS NOT NULL;
