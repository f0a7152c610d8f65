import { IDEMPOTENCY_TABLE } from './idempotency-statements.js';
import { quoteSchema } from './schema-name.js';
import { WEBHOOK_COLUMNS } from './webhook-row.js';

/** The unique index of twin claims (migration 0011): its violation means "a second active twin". */
export const ACTIVE_TWIN_INDEX = 'keyhook_webhooks_twin_claim_idx';

/** Every statement the store runs on keyhook_webhooks, built once per schema. */
export interface WebhookStatements {
  insert: string;
  insertCompleting: string;
  get: string;
  list: string;
  listBefore: string;
  setStatus: string;
  updateSubscription: string;
  rotateSecret: string;
  delete: string;
}

export function webhookStatements(schema: string): WebhookStatements {
  const table = `${quoteSchema(schema)}.keyhook_webhooks`;
  // The arbiter is the twin-claim index only: concurrent claims of one key wait on it and one wins, while an
  // id clash still raises (a bug, not a twin). $18 is the claim core's rule gives the status (toWebhookParams);
  // a row that claims nothing (NULL) never conflicts.
  const insert = `INSERT INTO ${table} (${WEBHOOK_COLUMNS}, twin_claim)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
      ON CONFLICT (tenant_id, twin_claim) DO NOTHING
      RETURNING id`;
  return {
    insert,

    // One statement, so the check, the webhook and the completion commit together or not at all. `held`
    // locks the claim's idempotency row FOR UPDATE: a takeover (the claim upsert locks that row too) waits
    // for this statement's commit, and then finds the key completed. When a takeover, release or completion
    // got there first, FOR UPDATE re-checks the row's latest committed version (not the snapshot's) and
    // finds nothing, so the insert writes nothing. The completion runs only when the insert wrote a row.
    insertCompleting: `WITH held AS MATERIALIZED (
        SELECT 1 FROM ${quoteSchema(schema)}.${IDEMPOTENCY_TABLE}
        WHERE tenant_id = $19 AND key = $20 AND claim_id = $21 AND state = 'in_progress'
        FOR UPDATE
      ),
      inserted AS (
        INSERT INTO ${table} (${WEBHOOK_COLUMNS}, twin_claim)
        SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18
        WHERE EXISTS (SELECT 1 FROM held)
        ON CONFLICT (tenant_id, twin_claim) DO NOTHING
        RETURNING id
      ),
      completed AS (
        UPDATE ${quoteSchema(schema)}.${IDEMPOTENCY_TABLE} SET state = 'completed', response_sealed = $22
        WHERE tenant_id = $19 AND key = $20 AND claim_id = $21 AND state = 'in_progress'
          AND EXISTS (SELECT 1 FROM inserted)
      )
      SELECT (SELECT count(*) FROM held)::int AS held, (SELECT count(*) FROM inserted)::int AS inserted`,

    get: `SELECT ${WEBHOOK_COLUMNS} FROM ${table} WHERE tenant_id = $1 AND id = $2`,

    list: `SELECT ${WEBHOOK_COLUMNS} FROM ${table}
      WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2`,

    listBefore: `SELECT ${WEBHOOK_COLUMNS} FROM ${table}
      WHERE tenant_id = $1 AND id < $3 ORDER BY id DESC LIMIT $2`,

    // Writes only a real change. $6 and $7 are core's rules for the new status (claimsTwinKey,
    // holdsDeliveries): the twin claim it makes, and whether it holds. Enabling beside an active twin fails
    // on the twin-claim index, and a concurrent enable of the other twin makes this wait for its commit and
    // then fail the same way. A status that does not hold starts the consecutive-failure count again. The
    // store runs it first in its transaction: its row lock is what publishEvent's FOR SHARE and a
    // completion's lock order against.
    setStatus: `UPDATE ${table} SET status = $3, disabled_reason = $4, updated_at = $5,
        disabled_at = CASE WHEN $4::text IS NULL THEN NULL ELSE $5::timestamptz END,
        twin_claim = CASE WHEN $6::boolean THEN twin_key END,
        consecutive_failures = CASE WHEN $7::boolean THEN consecutive_failures ELSE 0 END
      WHERE tenant_id = $1 AND id = $2 AND status <> $3
      RETURNING ${WEBHOOK_COLUMNS}`,

    // A webhook that claims its twin key claims the new one instead (the claim is carried over, not
    // decided); one moved onto a key another webhook claims fails on the twin-claim index, as an insert would.
    // A NULL scheme ($8) keeps the stored one, in this statement (no read-then-write); the rate
    // changes only when $9 says the change names one ($10, NULL for none).
    updateSubscription: `UPDATE ${table} SET url = $3, events = $4, twin_key = $5,
        twin_claim = CASE WHEN twin_claim IS NULL THEN NULL ELSE $5 END, updated_at = $6,
        signature_scheme = coalesce($8::text, signature_scheme),
        rate_per_second = CASE WHEN $9::boolean THEN $10::float8 ELSE rate_per_second END,
        description = CASE WHEN $11::boolean THEN $12::text ELSE description END
      WHERE tenant_id = $1 AND id = $2 AND twin_key = $7
      RETURNING ${WEBHOOK_COLUMNS}`,

    // One statement: the right-hand sides read the row as it was, so with an expiry ($5) the previous
    // secret is the sealed value this replaces, exactly as stored; without one, both are cleared.
    rotateSecret: `UPDATE ${table} SET secret_sealed = $3, updated_at = $4, public_key = $6,
        previous_secret_sealed = CASE WHEN $5::timestamptz IS NULL THEN NULL ELSE secret_sealed END,
        previous_secret_expires_at = $5::timestamptz
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${WEBHOOK_COLUMNS}`,

    // Its deliveries and their attempts go with it (ON DELETE CASCADE, migration 0004), in this statement.
    delete: `DELETE FROM ${table} WHERE tenant_id = $1 AND id = $2`,
  };
}
