-- Who set a key's own rate limit (docs/decisions.md §22.5): true when the host did (a caller with
-- no portal grant), false when a portal session did or the key has none. A portal session may
-- lower a limit the host set, never raise or remove it. Limits set before this column existed are
-- taken as the host's: the safe reading of a limit whose author is unknown.
ALTER TABLE api_keys ADD COLUMN rate_limit_by_host boolean NOT NULL DEFAULT false;
UPDATE api_keys SET rate_limit_by_host = true WHERE rate_limit IS NOT NULL;
