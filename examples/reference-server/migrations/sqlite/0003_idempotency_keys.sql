-- Idempotency-Key on the data plane's POSTs (data-plane.md §3.4): a key's first answer, written
-- in the transaction of the write it answers for, so a retry after an ambiguous commit finds it.
-- One row per (tenant, key). Timestamps are integer milliseconds since the epoch.
CREATE TABLE staging_idempotency_keys (
  tenant_id      TEXT    NOT NULL,
  key            TEXT    NOT NULL,
  -- SHA-256 of the route, its path parameters and the canonical JSON body: another request is a conflict.
  fingerprint    TEXT    NOT NULL,
  -- The request that wrote the row: only it may complete or free a key held in progress.
  claim_id       TEXT    NOT NULL,
  -- A run start still copying its item set holds the key in progress; the start's failure frees it.
  pending_run    TEXT,
  -- The first answer as sent; NULL while in progress. answer_body is NULL for an answer with no body.
  answer_status  INTEGER,
  answer_body    TEXT,
  created_at     INTEGER NOT NULL,
  -- A row past it counts as absent at once; the jobs' sweep deletes it.
  expires_at     INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, key)
);
CREATE INDEX staging_idempotency_keys_expires ON staging_idempotency_keys (expires_at);
CREATE INDEX staging_idempotency_keys_pending ON staging_idempotency_keys (pending_run) WHERE pending_run IS NOT NULL;
