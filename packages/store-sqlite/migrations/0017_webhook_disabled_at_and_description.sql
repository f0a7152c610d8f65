-- When an endpoint was disabled, beside why (docs/decisions.md §22.15). NULL while it is active.
-- An endpoint disabled before this column existed takes its last change's time: the best known.
ALTER TABLE keyhook_webhooks ADD COLUMN disabled_at INTEGER;
UPDATE keyhook_webhooks SET disabled_at = updated_at WHERE status = 'disabled';

-- The customer's own words for an endpoint (docs/decisions.md §22.16). NULL: none.
ALTER TABLE keyhook_webhooks ADD COLUMN description TEXT;
