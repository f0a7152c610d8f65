-- Two changes to webhooks (docs/decisions.md §10.1, §6.10). The runner sets search_path to the
-- store's schema.
--
-- An endpoint whose receiver answered 410 Gone is disabled with the reason 'gone': the CHECK of
-- 0003 is replaced by a wider one, which every existing row meets.
ALTER TABLE keyhook_webhooks
  DROP CONSTRAINT keyhook_webhooks_disabled_reason_check,
  ADD CONSTRAINT keyhook_webhooks_disabled_reason_check
    CHECK (disabled_reason IS NULL OR disabled_reason IN ('manual', 'failures', 'gone'));

-- An endpoint that signs with an ed25519 key pair keeps its public key (whpk_…) in clear: it is
-- not a secret, and reads show it. NULL, which every existing row reads: a shared secret.
ALTER TABLE keyhook_webhooks ADD COLUMN public_key text;
