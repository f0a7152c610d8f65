-- Portal sessions (store.insertPortalSession and the methods after it): a one-time link that
-- opens one browser session for a host's customer. Only the SHA-256 of the link's token and of
-- the session's token are stored, never a token. Timestamps are INTEGER milliseconds since the
-- epoch, and lists JSON arrays, as in keyhook_api_keys.
CREATE TABLE keyhook_portal_sessions (
  id            TEXT    NOT NULL PRIMARY KEY,
  tenant_id     TEXT    NOT NULL,
  -- Unique across all tenants: the exchange finds the session by its link alone.
  link_hash     TEXT    NOT NULL UNIQUE,
  -- NULL until the link is exchanged; NULLs are distinct, so links not yet exchanged never conflict.
  session_hash  TEXT    UNIQUE,
  permissions   TEXT    NOT NULL CHECK (json_valid(permissions) AND json_type(permissions) = 'array'),
  -- NULL: a key created in the session may carry any scope of the host's.
  scopes        TEXT    CHECK (scopes IS NULL OR (json_valid(scopes) AND json_type(scopes) = 'array')),
  created_at    INTEGER NOT NULL,
  expires_at    INTEGER NOT NULL,
  exchanged_at  INTEGER,
  revoked_at    INTEGER,
  -- A session hash exactly once the link is exchanged.
  CHECK ((session_hash IS NULL) = (exchanged_at IS NULL))
) STRICT;

-- The purge at each insert deletes by expiry across all tenants.
CREATE INDEX keyhook_portal_sessions_expires_at ON keyhook_portal_sessions (expires_at);

-- Revoking every session of a tenant.
CREATE INDEX keyhook_portal_sessions_tenant_id ON keyhook_portal_sessions (tenant_id);

-- A tenant's attempts by start time, for its webhooks' recent success rates
-- (store.countRecentAttempts, src/portal-statements.ts). No index fitted it: the attempts table
-- is keyed by delivery, so the count would read every attempt of every tenant. With the status
-- code in it (and, the table being WITHOUT ROWID, the delivery id), the count reads the window's
-- entries and each one's delivery by its key, never an attempt row. The tenant leads, not the
-- time: with the time first a count would read every tenant's attempts in its window, and
-- better-sqlite3 blocks the event loop while it reads. The price is on the write: attempts are
-- only inserted and deleted, but each goes into its tenant's part of the index, so a commit that
-- records attempts of many tenants writes a page more for each. Built under the write lock, as
-- every migration runs; readers of a WAL database go on meanwhile.
CREATE INDEX keyhook_attempts_tenant_started ON keyhook_attempts (tenant_id, started_at, status_code);
