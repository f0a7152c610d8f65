-- Portal sessions (store.insertPortalSession and the methods after it): a one-time link that
-- opens one browser session for a host's customer. Only the SHA-256 of the link's token and of
-- the session's token are stored, never a token.
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
CREATE TABLE keyhook_portal_sessions (
  -- COLLATE "C": ids compare byte-wise, as JavaScript compares them, whatever the database's locale.
  id text COLLATE "C" PRIMARY KEY,
  tenant_id text NOT NULL,
  -- Unique across all tenants: the exchange finds the session by its link alone.
  link_hash text NOT NULL UNIQUE,
  -- NULL until the link is exchanged; NULLs are distinct, so links not yet exchanged never conflict.
  session_hash text UNIQUE,
  permissions text[] NOT NULL,
  -- NULL: a key created in the session may carry any scope of the host's.
  scopes text[],
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  exchanged_at timestamptz,
  revoked_at timestamptz,
  -- A session hash exactly once the link is exchanged.
  CHECK ((session_hash IS NULL) = (exchanged_at IS NULL))
);

-- The purge at each insert deletes by expiry across all tenants.
CREATE INDEX keyhook_portal_sessions_expires_at_idx ON keyhook_portal_sessions (expires_at);

-- Revoking every session of a tenant.
CREATE INDEX keyhook_portal_sessions_tenant_id_idx ON keyhook_portal_sessions (tenant_id);

-- A tenant's attempts by start time, for its webhooks' recent success rates
-- (store.countRecentAttempts, src/portal-statements.ts). No index fitted it: the attempts are
-- keyed by delivery, so the count would read every attempt of every tenant. With the delivery id
-- and the status code included, the count reads the window's entries (an index-only scan where
-- the visibility map allows) and each one's delivery by its key. The tenant leads, not the
-- time, so a count reads its own tenant's window and never another's. Attempts are only inserted
-- and deleted, so this is one more entry written per attempt, and no update loses its HOT path.
-- CREATE INDEX takes a SHARE lock: recording attempts waits for the build, which scans the
-- whole table; reads, leases and publishes go on.
CREATE INDEX keyhook_delivery_attempts_tenant_started_idx
  ON keyhook_delivery_attempts (tenant_id, started_at) INCLUDE (delivery_id, status_code);
