-- How an endpoint's deliveries are signed (docs/decisions.md §6.9): keyhook's own scheme, or
-- Standard Webhooks. Existing rows get 'keyhook', the scheme they were always signed with, so
-- their deliveries stay unchanged. With a constant default, Postgres 11+ adds the column without
-- rewriting the table. The runner sets search_path to the store's schema.
ALTER TABLE keyhook_webhooks
  ADD COLUMN signature_scheme text NOT NULL DEFAULT 'keyhook'
    CONSTRAINT keyhook_webhooks_signature_scheme CHECK (signature_scheme IN ('keyhook', 'standard-webhooks'));
