-- API keys (docs/decisions.md §3.3). Only the lookup id and SHA-256 of the full key are stored, never the plaintext.
-- Timestamps are INTEGER milliseconds since the epoch, so a Date round-trips exactly.
CREATE TABLE keyhook_api_keys (
  id            TEXT    NOT NULL PRIMARY KEY,
  tenant_id     TEXT    NOT NULL,
  key_lookup    TEXT    NOT NULL UNIQUE,
  name          TEXT    NOT NULL,
  scopes        TEXT    NOT NULL CHECK (json_valid(scopes) AND json_type(scopes) = 'array'),
  key_hash      TEXT    NOT NULL,
  status        TEXT    NOT NULL CHECK (status IN ('active', 'revoked')),
  expires_at    INTEGER,
  created_at    INTEGER NOT NULL,
  last_used_at  INTEGER,
  revoked_at    INTEGER,
  -- A revoked key always says when; an active one never does.
  CHECK ((status = 'revoked') = (revoked_at IS NOT NULL))
) STRICT;

-- Verification asks for lookup id and hash together (Store.findApiKeyByCredential): an unknown id
-- and a wrong secret both end in this index without reading a row, so they cost the same.
CREATE INDEX keyhook_api_keys_credential ON keyhook_api_keys (key_lookup, key_hash);

-- Tenant listing: newest first by id, paged with `id < before`.
CREATE INDEX keyhook_api_keys_tenant_id ON keyhook_api_keys (tenant_id, id);
