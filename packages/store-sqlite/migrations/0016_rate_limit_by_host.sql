-- Who set a key's own rate limit (docs/decisions.md §22.5): 1 when the host did (a caller with no
-- portal grant), 0 when a portal session did or the key has none. A portal session may lower a
-- limit the host set, never raise or remove it. Limits set before this column existed are taken
-- as the host's: the safe reading of a limit whose author is unknown.
ALTER TABLE keyhook_api_keys ADD COLUMN rate_limit_by_host INTEGER NOT NULL DEFAULT 0
  CHECK (rate_limit_by_host IN (0, 1));
UPDATE keyhook_api_keys SET rate_limit_by_host = 1 WHERE rate_limit IS NOT NULL;
