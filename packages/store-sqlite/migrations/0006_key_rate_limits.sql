-- A key's own rate limit: at most rate_limit requests in each window of rate_limit_window
-- seconds. Both NULL: the app's default applies. The counting itself is in memory (core).
ALTER TABLE keyhook_api_keys ADD COLUMN rate_limit INTEGER
  CHECK (rate_limit IS NULL OR rate_limit > 0);
ALTER TABLE keyhook_api_keys ADD COLUMN rate_limit_window INTEGER
  CHECK ((rate_limit_window IS NULL) = (rate_limit IS NULL) AND (rate_limit_window IS NULL OR rate_limit_window > 0));
