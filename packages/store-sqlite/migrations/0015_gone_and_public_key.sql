-- Two changes to webhooks (docs/decisions.md §10.1, §6.10).
--
-- An endpoint whose receiver answered 410 Gone is disabled with the reason 'gone'. A column's CHECK
-- cannot be altered in SQLite, so the column is made again: a new one with the wider CHECK, filled
-- from the old, which is then dropped (its own CHECK goes with it) and whose name the new one
-- takes. The table itself is not rebuilt: nothing that refers to it (the deliveries' foreign key,
-- the active-twin index) is touched, and no row of another table moves.
ALTER TABLE keyhook_webhooks ADD COLUMN disabled_reason_next TEXT
  CHECK (disabled_reason_next IS NULL OR disabled_reason_next IN ('manual', 'failures', 'gone'));
UPDATE keyhook_webhooks SET disabled_reason_next = disabled_reason;
ALTER TABLE keyhook_webhooks DROP COLUMN disabled_reason;
ALTER TABLE keyhook_webhooks RENAME COLUMN disabled_reason_next TO disabled_reason;

-- An endpoint that signs with an ed25519 key pair keeps its public key (whpk_…) in clear: it is
-- not a secret, and reads show it. NULL, which every existing row reads: a shared secret.
ALTER TABLE keyhook_webhooks ADD COLUMN public_key TEXT;
