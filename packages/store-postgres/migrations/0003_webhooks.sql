-- Webhook endpoints and Idempotency-Keys (docs/http-api.md §4.3, docs/decisions.md §5.7, §7).
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
CREATE TABLE keyhook_webhooks (
  -- COLLATE "C": ids sort byte-wise, as JavaScript compares them, whatever the database's locale.
  id text COLLATE "C" PRIMARY KEY,
  tenant_id text NOT NULL,
  url text NOT NULL,
  -- An array, not a set: the events come back in the order they were written.
  events text[] NOT NULL,
  twin_key text NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'disabled')),
  disabled_reason text CHECK (disabled_reason IS NULL OR disabled_reason IN ('manual', 'failures')),
  -- Only ever the sealed signing secret (crypto/secret-box.ts), never the plaintext.
  secret_sealed text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);

-- At most one active twin per tenant (docs/http-api.md §4.3 rule 5), decided by the index, so concurrent inserts
-- and re-enables race on it and exactly one wins. src/webhook-statements.ts names it.
CREATE UNIQUE INDEX keyhook_webhooks_active_twin_idx ON keyhook_webhooks (tenant_id, twin_key)
  WHERE status = 'active';

-- A tenant's webhooks, newest first, paged by id.
CREATE INDEX keyhook_webhooks_tenant_id_id_idx ON keyhook_webhooks (tenant_id, id);

CREATE TABLE keyhook_idempotency_keys (
  tenant_id text NOT NULL,
  key text NOT NULL,
  fingerprint text NOT NULL,
  -- Random per claim: complete and release match it, so a claim taken over cannot write.
  claim_id text NOT NULL,
  state text NOT NULL CHECK (state IN ('in_progress', 'completed')),
  -- The sealed stored response: present exactly when the record is completed.
  response_sealed text,
  created_at timestamptz NOT NULL,
  locked_until timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, key),
  CHECK ((state = 'completed') = (response_sealed IS NOT NULL))
);

-- The purge deletes by expiry across all tenants.
CREATE INDEX keyhook_idempotency_keys_expires_at_idx ON keyhook_idempotency_keys (expires_at);
