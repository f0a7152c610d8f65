-- Signing-secret rotation with an overlap: the secret a rotation replaced, sealed exactly as
-- secret_sealed was (never the plaintext), keeps signing beside the new one until
-- previous_secret_expires_at. Both NULL: there is no previous secret; a rotation without an
-- overlap clears both. Only the secret the last rotation replaced is kept.
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
ALTER TABLE keyhook_webhooks
  ADD COLUMN previous_secret_sealed text,
  ADD COLUMN previous_secret_expires_at timestamptz,
  ADD CONSTRAINT keyhook_webhooks_previous_secret_whole
    CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL));
