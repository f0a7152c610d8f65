-- Deliveries and attempts are rebuilt as WITHOUT ROWID tables, clustered on their primary keys,
-- and the checks and the due index are written without IN lists.
--
-- Why: both tables are written on every delivery (a publish inserts a delivery, an attempt updates
-- it and inserts an attempt), and each of these changes cost more than it had to (BENCHMARKS.md):
-- - In a rowid table a TEXT primary key is a second B-tree beside the table, so every insert wrote
--   two trees and every lookup by id read two. Clustered on the key, each is one tree. Rows are
--   small (an attempt's logged response is at most 4 KiB and usually empty; a longer one spills to
--   an overflow page, as SQLite does for any large row).
-- - SQLite evaluates `status IN ('a', 'b', …)` by building a temporary table of the list, for every
--   row a statement writes: once per check and twice per partial index (old row, new row). The
--   same conditions as comparisons joined by OR, and the due index's condition as
--   `due_at IS NOT NULL` (the same rows: a check below ties a due time to exactly the queued and
--   leased states), cost nothing of the kind. A delivery's insert and its final update each took
--   about 40 % less time.
--
-- The rebuild follows SQLite's procedure for schema changes ALTER TABLE cannot make: a new table,
-- copy, drop the old, rename. The attempts wait in a temporary table meanwhile, and are dropped
-- before the old deliveries, so that dropping those (an implicit DELETE when foreign_keys is on)
-- has no child rows to cascade to. The new attempts table is created after the rename, referring
-- to keyhook_deliveries by its final name: nothing relies on a rename rewriting a reference,
-- which a connection with legacy_alter_table on would not do.

CREATE TABLE keyhook_deliveries_next (
  id               TEXT    NOT NULL PRIMARY KEY,
  tenant_id        TEXT    NOT NULL,
  webhook_id       TEXT    NOT NULL REFERENCES keyhook_webhooks (id) ON DELETE CASCADE,
  event_id         TEXT    NOT NULL,
  event_type       TEXT    NOT NULL,
  status           TEXT    NOT NULL CHECK (status = 'pending' OR status = 'in_flight'
                     OR status = 'retry_scheduled' OR status = 'succeeded' OR status = 'failed'
                     OR status = 'held'),
  attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- pending, retry_scheduled: when the next attempt is due; in_flight: when the lease runs out.
  due_at           INTEGER,
  lease_id         TEXT,
  held_since       INTEGER,
  last_attempt_at  INTEGER,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL,
  FOREIGN KEY (tenant_id, event_id) REFERENCES keyhook_events (tenant_id, id),
  -- The state machine's invariants (DeliveryRecord), as in 0003.
  CHECK ((status = 'pending' OR status = 'retry_scheduled' OR status = 'in_flight') = (due_at IS NOT NULL)),
  CHECK ((status = 'in_flight') = (lease_id IS NOT NULL)),
  CHECK ((status = 'held') = (held_since IS NOT NULL))
) STRICT, WITHOUT ROWID;

INSERT INTO keyhook_deliveries_next
  SELECT id, tenant_id, webhook_id, event_id, event_type, status, attempts, due_at, lease_id,
    held_since, last_attempt_at, created_at, updated_at
  FROM keyhook_deliveries;

CREATE TEMP TABLE keyhook_attempts_hold AS
  SELECT delivery_id, attempt, tenant_id, started_at, duration_ms, status_code, error, response_body
  FROM keyhook_attempts;

DROP TABLE keyhook_attempts;
DROP TABLE keyhook_deliveries;
ALTER TABLE keyhook_deliveries_next RENAME TO keyhook_deliveries;

CREATE TABLE keyhook_attempts (
  delivery_id    TEXT    NOT NULL REFERENCES keyhook_deliveries (id) ON DELETE CASCADE,
  attempt        INTEGER NOT NULL CHECK (attempt >= 1),
  tenant_id      TEXT    NOT NULL,
  started_at     INTEGER NOT NULL,
  duration_ms    INTEGER NOT NULL,
  status_code    INTEGER,
  error          TEXT,
  response_body  TEXT,
  PRIMARY KEY (delivery_id, attempt)
) STRICT, WITHOUT ROWID;

INSERT INTO keyhook_attempts
  SELECT delivery_id, attempt, tenant_id, started_at, duration_ms, status_code, error, response_body
  FROM temp.keyhook_attempts_hold;
DROP TABLE temp.keyhook_attempts_hold;

-- The indexes went with the old tables. The due index holds the same rows as before (pending,
-- retry_scheduled and in_flight: exactly the rows with a due time); the leasing query's
-- `due_at <= ?` implies its condition, which is what lets SQLite use it.
CREATE INDEX keyhook_deliveries_due ON keyhook_deliveries (due_at, id) WHERE due_at IS NOT NULL;
CREATE INDEX keyhook_deliveries_webhook_id ON keyhook_deliveries (webhook_id, id);
CREATE INDEX keyhook_deliveries_held ON keyhook_deliveries (held_since) WHERE status = 'held';
