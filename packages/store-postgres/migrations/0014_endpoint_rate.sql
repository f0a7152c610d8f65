-- An endpoint's delivery rate (docs/decisions.md §8.18). rate_per_second is its limit; NULL, which
-- every existing row reads, is none. Its slot pointers live in a table of their own, one row per
-- webhook, so that the lease claim can lock them (FOR UPDATE SKIP LOCKED) without contending with
-- the share locks publishes and completions hold on the webhook row. They are milliseconds since
-- the epoch with their fractions: next_at the endpoint's next send, queue_at the end of the slots
-- given to deliveries that wait. The runner sets search_path to the store's schema.
ALTER TABLE keyhook_webhooks
  ADD COLUMN rate_per_second double precision
    CONSTRAINT keyhook_webhooks_rate_per_second CHECK (rate_per_second > 0);

CREATE TABLE keyhook_endpoint_rates (
  webhook_id text COLLATE "C" PRIMARY KEY REFERENCES keyhook_webhooks (id) ON DELETE CASCADE,
  next_at double precision,
  queue_at double precision
);

INSERT INTO keyhook_endpoint_rates (webhook_id) SELECT id FROM keyhook_webhooks;

-- Every webhook has its row from its insert on, written by the insert's own statement: the
-- claim only locks rows, it never creates one. The schema is the trigger's table's, as in 0002.
CREATE FUNCTION keyhook_endpoint_rate_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('INSERT INTO %I.keyhook_endpoint_rates (webhook_id) VALUES ($1)', TG_TABLE_SCHEMA)
    USING NEW.id;
  RETURN NULL;
END;
$$;

CREATE TRIGGER keyhook_webhooks_endpoint_rate
  AFTER INSERT ON keyhook_webhooks
  FOR EACH ROW
  EXECUTE FUNCTION keyhook_endpoint_rate_row();
