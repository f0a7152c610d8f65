-- Twin claims (docs/decisions.md §5.7). Core decides which endpoints claim their twin key
-- (claimsTwinKey: the active ones); the store keeps the claim in a column of its own, the twin
-- key or NULL, and a plain unique index allows one claim per key in a tenant. The partial index
-- of 0002, whose predicate named the status that makes a twin, goes: no statement of the store
-- names that status any more.
ALTER TABLE keyhook_webhooks ADD COLUMN twin_claim TEXT CHECK (twin_claim IS NULL OR twin_claim = twin_key);

-- The claims as the rule stood when this migration was written: an active endpoint's.
UPDATE keyhook_webhooks SET twin_claim = twin_key WHERE status = 'active';

-- NULLs are distinct in a unique index, so endpoints that claim nothing never conflict. The
-- index decides, atomically, across connections and processes, as the partial one did.
DROP INDEX keyhook_webhooks_active_twin;
CREATE UNIQUE INDEX keyhook_webhooks_twin_claim ON keyhook_webhooks (tenant_id, twin_claim);
