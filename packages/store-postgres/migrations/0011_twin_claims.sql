-- Twin claims (docs/decisions.md §5.7).
-- The runner sets search_path to the store's schema, so no name here is schema-qualified.
--
-- Core decides which endpoints claim their twin key (claimsTwinKey: the active ones); the store
-- keeps the claim in a column of its own, the twin key or NULL, and a plain unique index allows
-- one claim per key in a tenant. The partial index of 0003, whose predicate named the status
-- that makes a twin, goes: no statement of the store names that status any more, and an insert's
-- ON CONFLICT names the new index's columns alone.
ALTER TABLE keyhook_webhooks ADD COLUMN twin_claim text
  CHECK (twin_claim IS NULL OR twin_claim = twin_key);

-- The claims as the rule stood when this migration was written: an active endpoint's.
UPDATE keyhook_webhooks SET twin_claim = twin_key WHERE status = 'active';

-- NULLs are distinct in a unique index, so endpoints that claim nothing never conflict. Built
-- before the old index goes, so no moment of the migration lacks the rule (the table is locked
-- by the ALTER above until the migration commits in any case). src/webhook-statements.ts names it.
CREATE UNIQUE INDEX keyhook_webhooks_twin_claim_idx ON keyhook_webhooks (tenant_id, twin_claim);
DROP INDEX keyhook_webhooks_active_twin_idx;
