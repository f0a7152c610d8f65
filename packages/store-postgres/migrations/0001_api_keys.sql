-- API keys (docs/decisions.md §3.3): only the lookup id and the SHA-256 of the full key, never the plaintext.
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
CREATE TABLE api_keys (
  -- COLLATE "C": ids sort byte-wise, as JavaScript compares them, whatever the database's locale.
  id text COLLATE "C" PRIMARY KEY,
  tenant_id text NOT NULL,
  -- Unique across all tenants: verification learns the tenant from the key.
  key_lookup text NOT NULL UNIQUE,
  name text NOT NULL,
  scopes text[] NOT NULL,
  key_hash text NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'revoked')),
  expires_at timestamptz,
  created_at timestamptz NOT NULL,
  last_used_at timestamptz,
  revoked_at timestamptz
);

-- Verification asks for lookup id and hash together (Store.findApiKeyByCredential).
CREATE INDEX api_keys_credential_idx ON api_keys (key_lookup, key_hash);

-- A tenant's keys, newest first, paged by id.
CREATE INDEX api_keys_tenant_id_id_idx ON api_keys (tenant_id, id);
