-- Events, their deliveries and the attempt log (docs/decisions.md §8), and each endpoint's failure count.
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.

-- Counts consecutive failed attempts of an endpoint; completeAttempt disables it at the limit, and
-- enabling it starts the count again. Not part of WebhookRecord: only the store reads it.
ALTER TABLE keyhook_webhooks
  ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0);

CREATE TABLE keyhook_events (
  tenant_id text NOT NULL,
  -- COLLATE "C": ids compare byte-wise, as JavaScript compares them, whatever the database's locale.
  id text COLLATE "C" NOT NULL,
  type text NOT NULL,
  -- text, not json/jsonb: every attempt must send exactly the bytes core serialised once.
  payload text NOT NULL,
  created_at timestamptz NOT NULL,
  -- Publishing is idempotent on (tenant, id): the second insert conflicts here and writes nothing.
  PRIMARY KEY (tenant_id, id)
);

CREATE TABLE keyhook_deliveries (
  id text COLLATE "C" PRIMARY KEY,
  tenant_id text NOT NULL,
  -- Deleting a webhook cancels its deliveries (and, through them, their attempts).
  webhook_id text COLLATE "C" NOT NULL REFERENCES keyhook_webhooks (id) ON DELETE CASCADE,
  event_id text COLLATE "C" NOT NULL,
  event_type text NOT NULL,
  status text NOT NULL
    CHECK (status IN ('pending', 'in_flight', 'retry_scheduled', 'succeeded', 'failed', 'held')),
  attempts integer NOT NULL CHECK (attempts >= 0),
  -- pending/retry_scheduled: when the next attempt is due; in_flight: when the lease runs out.
  due_at timestamptz,
  lease_id text,
  held_since timestamptz,
  last_attempt_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  FOREIGN KEY (tenant_id, event_id) REFERENCES keyhook_events (tenant_id, id),
  -- The DeliveryRecord invariants, so a bug (or a hand edit) cannot leave a row no state explains.
  CHECK ((due_at IS NOT NULL) = (status IN ('pending', 'retry_scheduled', 'in_flight'))),
  CHECK ((lease_id IS NOT NULL) = (status = 'in_flight')),
  CHECK ((held_since IS NOT NULL) = (status = 'held'))
);

-- The lease's scan: due deliveries, oldest due first, ties by id (src/delivery-statements.ts).
CREATE INDEX keyhook_deliveries_due_idx ON keyhook_deliveries (due_at, id)
  WHERE status IN ('pending', 'retry_scheduled', 'in_flight');

-- One webhook's deliveries, newest first, paged by id; also what holding, releasing and the
-- ON DELETE CASCADE from keyhook_webhooks look rows up by.
CREATE INDEX keyhook_deliveries_webhook_id_id_idx ON keyhook_deliveries (webhook_id, id);

-- The held-retention expiry reads held deliveries by age, across all tenants.
CREATE INDEX keyhook_deliveries_held_since_idx ON keyhook_deliveries (held_since)
  WHERE status = 'held';

CREATE TABLE keyhook_delivery_attempts (
  delivery_id text COLLATE "C" NOT NULL REFERENCES keyhook_deliveries (id) ON DELETE CASCADE,
  tenant_id text NOT NULL,
  -- 1 for the first. Only the lease holder records, once per attempt, so (delivery, attempt) is unique.
  attempt integer NOT NULL CHECK (attempt >= 1),
  started_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  -- NULL when no response came (timeout, refused, DNS, TLS).
  status_code integer,
  error text,
  -- At most 4 KiB of the response, cut by core.
  response_body text,
  PRIMARY KEY (delivery_id, attempt)
);
