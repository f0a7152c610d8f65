-- Every change to what verification reads announces itself on one channel, with this schema and
-- the key id as payload, so app instances that cache verified keys drop them (src/change-feed.ts).
-- A trigger, not the store's statements, so a change made by hand in psql is announced too.
CREATE FUNCTION keyhook_notify_key_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('keyhook_key_changes', TG_TABLE_SCHEMA || ':' || COALESCE(NEW.id, OLD.id));
  RETURN NULL;
END;
$$;

CREATE TRIGGER api_keys_key_change
  AFTER UPDATE ON api_keys
  FOR EACH ROW
  WHEN (OLD.key_hash IS DISTINCT FROM NEW.key_hash
        OR OLD.status IS DISTINCT FROM NEW.status
        OR OLD.scopes IS DISTINCT FROM NEW.scopes
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
  EXECUTE FUNCTION keyhook_notify_key_change();

CREATE TRIGGER api_keys_key_delete
  AFTER DELETE ON api_keys
  FOR EACH ROW
  EXECUTE FUNCTION keyhook_notify_key_change();
