-- A key's own rate limit: at most rate_limit requests in each window of rate_limit_window
-- seconds. Both NULL: the app's default applies. The counting itself is in memory (core).
ALTER TABLE api_keys
  ADD COLUMN rate_limit integer CHECK (rate_limit > 0),
  ADD COLUMN rate_limit_window integer CHECK (rate_limit_window > 0),
  ADD CONSTRAINT api_keys_rate_limit_whole CHECK ((rate_limit IS NULL) = (rate_limit_window IS NULL));

-- Cached keys carry their limit, so a changed limit is announced like a revoke (0002).
DROP TRIGGER api_keys_key_change ON api_keys;

CREATE TRIGGER api_keys_key_change
  AFTER UPDATE ON api_keys
  FOR EACH ROW
  WHEN (OLD.key_hash IS DISTINCT FROM NEW.key_hash
        OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.scopes IS DISTINCT FROM NEW.scopes
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
        OR OLD.rate_limit IS DISTINCT FROM NEW.rate_limit
        OR OLD.rate_limit_window IS DISTINCT FROM NEW.rate_limit_window)
  EXECUTE FUNCTION keyhook_notify_key_change();
