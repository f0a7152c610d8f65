-- An endpoint's delivery rate (docs/decisions.md §8.18): rate_per_second is its limit (NULL: none,
-- which every existing row reads); rate_next_at and rate_queue_at are its two slot pointers, in
-- milliseconds since the epoch with their fractions, which only the lease claim advances and a
-- new limit or a release resets. A CHECK keeps a stored limit positive; core checks its bounds.
ALTER TABLE keyhook_webhooks ADD COLUMN rate_per_second REAL CHECK (rate_per_second > 0);
ALTER TABLE keyhook_webhooks ADD COLUMN rate_next_at REAL;
ALTER TABLE keyhook_webhooks ADD COLUMN rate_queue_at REAL;
