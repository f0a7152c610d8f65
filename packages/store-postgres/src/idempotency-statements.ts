import { IDEMPOTENCY_COLUMNS } from './idempotency-row.js';
import { quoteSchema } from './schema-name.js';

export const IDEMPOTENCY_TABLE = 'keyhook_idempotency_keys';

/** Every statement the store runs on keyhook_idempotency_keys, built once per schema. */
export interface IdempotencyStatements {
  claim: string;
  get: string;
  complete: string;
  release: string;
  purge: string;
  holdsSealedValues: string;
}

export function idempotencyStatements(schema: string): IdempotencyStatements {
  const table = `${quoteSchema(schema)}.${IDEMPOTENCY_TABLE}`;
  return {
    // Concurrent claims wait on the primary key; each loser then locks the winner's row and re-checks
    // the WHERE on it, finds it held, and writes nothing. Only a free (expired or dead) record is replaced.
    claim: `INSERT INTO ${table} AS held (${IDEMPOTENCY_COLUMNS})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
      ON CONFLICT (tenant_id, key) DO UPDATE SET
        fingerprint = EXCLUDED.fingerprint,
        claim_id = EXCLUDED.claim_id,
        state = EXCLUDED.state,
        response_sealed = EXCLUDED.response_sealed,
        created_at = EXCLUDED.created_at,
        locked_until = EXCLUDED.locked_until,
        expires_at = EXCLUDED.expires_at
      WHERE held.expires_at <= $10 OR (held.state = 'in_progress' AND held.locked_until <= $10)
      RETURNING claim_id`,

    get: `SELECT ${IDEMPOTENCY_COLUMNS} FROM ${table} WHERE tenant_id = $1 AND key = $2`,

    // Matching the claim id and state: a claim that was taken over or already completed writes nothing.
    complete: `UPDATE ${table} SET state = 'completed', response_sealed = $4
      WHERE tenant_id = $1 AND key = $2 AND claim_id = $3 AND state = 'in_progress'`,

    release: `DELETE FROM ${table}
      WHERE tenant_id = $1 AND key = $2 AND claim_id = $3 AND state = 'in_progress'`,

    // Every tenant's, through the expires_at index.
    purge: `DELETE FROM ${table} WHERE expires_at <= $1`,

    // Sealed values live in two tables: the webhooks' signing secrets and the completed answers.
    holdsSealedValues: `SELECT EXISTS (SELECT 1 FROM ${quoteSchema(schema)}.keyhook_webhooks)
      OR EXISTS (SELECT 1 FROM ${table} WHERE response_sealed IS NOT NULL) AS sealed`,
  };
}
