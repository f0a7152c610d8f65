-- How an endpoint's deliveries are signed (docs/decisions.md §6.9): keyhook's own scheme, or
-- Standard Webhooks. Existing rows get 'keyhook', the scheme they were always signed with, so
-- their deliveries stay unchanged. The scheme is chosen at create and changed by PATCH.
ALTER TABLE keyhook_webhooks ADD COLUMN signature_scheme TEXT NOT NULL DEFAULT 'keyhook'
  CHECK (signature_scheme IN ('keyhook', 'standard-webhooks'));
