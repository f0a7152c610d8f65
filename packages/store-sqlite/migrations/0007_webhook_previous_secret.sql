-- Signing-secret rotation with an overlap: the secret a rotation replaced, sealed exactly as
-- secret_sealed was, keeps signing beside the new one until previous_secret_expires_at (INTEGER
-- milliseconds since the epoch, as in keyhook_api_keys). Both NULL: there is no previous secret;
-- a rotation without an overlap clears both. Only the secret the last rotation replaced is kept.
--
-- A column's CHECK in ADD COLUMN may name only columns that already exist, so the tie between the
-- two goes on the second.
ALTER TABLE keyhook_webhooks ADD COLUMN previous_secret_sealed TEXT;
ALTER TABLE keyhook_webhooks ADD COLUMN previous_secret_expires_at INTEGER
  CHECK ((previous_secret_expires_at IS NULL) = (previous_secret_sealed IS NULL));
