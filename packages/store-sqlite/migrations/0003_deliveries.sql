-- Events, their deliveries to each endpoint, and the log of every attempt (docs/decisions.md §8).
-- Timestamps are INTEGER milliseconds since the epoch, as in keyhook_api_keys.
--
-- The foreign keys below cascade when `foreign_keys` is on (the store turns it on for the files it
-- opens), but a connection passed in as `database` keeps its own pragmas: deleteWebhook therefore
-- deletes the attempts and deliveries itself, in the same transaction, and never relies on them.

-- An endpoint's consecutive permanent failures, for the auto-disable (reset by a success or an enable).
ALTER TABLE keyhook_webhooks
  ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0);

-- One published event per (tenant, id): publishing the id again writes nothing.
CREATE TABLE keyhook_events (
  tenant_id   TEXT    NOT NULL,
  id          TEXT    NOT NULL,
  type        TEXT    NOT NULL,
  -- The JSON body exactly as it goes on the wire, every attempt: stored as given, never re-encoded.
  payload     TEXT    NOT NULL,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, id)
) STRICT;

-- One event on its way to one endpoint.
CREATE TABLE keyhook_deliveries (
  id               TEXT    NOT NULL PRIMARY KEY,
  tenant_id        TEXT    NOT NULL,
  webhook_id       TEXT    NOT NULL REFERENCES keyhook_webhooks (id) ON DELETE CASCADE,
  event_id         TEXT    NOT NULL,
  event_type       TEXT    NOT NULL,
  status           TEXT    NOT NULL CHECK (status IN
                     ('pending', 'in_flight', 'retry_scheduled', 'succeeded', 'failed', 'held')),
  attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- pending, retry_scheduled: when the next attempt is due; in_flight: when the lease runs out.
  due_at           INTEGER,
  lease_id         TEXT,
  held_since       INTEGER,
  last_attempt_at  INTEGER,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL,
  FOREIGN KEY (tenant_id, event_id) REFERENCES keyhook_events (tenant_id, id),
  -- The state machine's invariants (DeliveryRecord): a due time exactly while queued or leased,
  -- a lease exactly while in flight, a hold time exactly while held.
  CHECK ((status IN ('pending', 'retry_scheduled', 'in_flight')) = (due_at IS NOT NULL)),
  CHECK ((status = 'in_flight') = (lease_id IS NOT NULL)),
  CHECK ((status = 'held') = (held_since IS NOT NULL))
) STRICT;

-- Leasing: the due deliveries, oldest due first, without reading finished or held ones. The
-- leasing query repeats this WHERE word for word, which is what lets SQLite pick the index.
CREATE INDEX keyhook_deliveries_due ON keyhook_deliveries (due_at, id)
  WHERE status IN ('pending', 'retry_scheduled', 'in_flight');

-- One webhook's deliveries, newest first, paged with `id < before`; also hold, release and delete.
CREATE INDEX keyhook_deliveries_webhook_id ON keyhook_deliveries (webhook_id, id);

-- Expiry of held deliveries past the retention, across tenants.
CREATE INDEX keyhook_deliveries_held ON keyhook_deliveries (held_since) WHERE status = 'held';

-- The log of every finished attempt; attempt 1 is the first.
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
) STRICT;
