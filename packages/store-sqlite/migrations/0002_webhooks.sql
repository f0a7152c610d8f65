-- Webhook endpoints (docs/http-api.md §4.2). The signing secret is stored only sealed (core's SecretBox), never in clear.
-- Timestamps are INTEGER milliseconds since the epoch, as in keyhook_api_keys.
CREATE TABLE keyhook_webhooks (
  id               TEXT    NOT NULL PRIMARY KEY,
  tenant_id        TEXT    NOT NULL,
  url              TEXT    NOT NULL,
  events           TEXT    NOT NULL CHECK (json_valid(events) AND json_type(events) = 'array'),
  twin_key         TEXT    NOT NULL,
  status           TEXT    NOT NULL CHECK (status IN ('active', 'disabled')),
  disabled_reason  TEXT    CHECK (disabled_reason IS NULL OR disabled_reason IN ('manual', 'failures')),
  secret_sealed    TEXT    NOT NULL,
  created_at       INTEGER NOT NULL,
  updated_at       INTEGER NOT NULL
) STRICT;

-- At most one active twin per tenant (docs/http-api.md §4.3 rule 5): the index itself decides, atomically, across
-- connections and processes; disabled twins are outside it and may be many.
CREATE UNIQUE INDEX keyhook_webhooks_active_twin ON keyhook_webhooks (tenant_id, twin_key)
  WHERE status = 'active';

-- Tenant listing: newest first by id, paged with `id < before`.
CREATE INDEX keyhook_webhooks_tenant_id ON keyhook_webhooks (tenant_id, id);

-- Idempotency-Key records, one per (tenant, key) from the first claim until purged after expires_at.
CREATE TABLE keyhook_idempotency_keys (
  tenant_id        TEXT    NOT NULL,
  key              TEXT    NOT NULL,
  fingerprint      TEXT    NOT NULL,
  claim_id         TEXT    NOT NULL,
  state            TEXT    NOT NULL CHECK (state IN ('in_progress', 'completed')),
  response_sealed  TEXT,
  created_at       INTEGER NOT NULL,
  locked_until     INTEGER NOT NULL,
  expires_at       INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, key),
  -- A completed record always carries its response; one in progress never does.
  CHECK ((state = 'completed') = (response_sealed IS NOT NULL))
) STRICT;

-- Purge deletes by expires_at across all tenants.
CREATE INDEX keyhook_idempotency_keys_expires_at ON keyhook_idempotency_keys (expires_at);
