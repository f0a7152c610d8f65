import type { IdempotencyClaimOutcome, IdempotencyRecord } from '@keyhook/core/store';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { RACE_ATTEMPTS, unavailable } from '../unavailable.js';

/** The keyhook_idempotency_keys columns, in the order `toClaimParams` binds them. */
const IDEMPOTENCY_COLUMNS =
  'tenant_id, key, fingerprint, claim_id, state, response_sealed, created_at, locked_until, expires_at';

export const statements = (t: Tables) => ({
  // Concurrent claims wait on the primary key; each loser then locks the winner's row and re-checks
  // the WHERE on it, finds it held, and writes nothing. Only a free (expired or dead) record is replaced.
  claim: `INSERT INTO ${t.idempotencyKeys} AS held (${IDEMPOTENCY_COLUMNS})
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

  get: `SELECT ${IDEMPOTENCY_COLUMNS} FROM ${t.idempotencyKeys} WHERE tenant_id = $1 AND key = $2`,
});

/** A row as pg returns it with its default parsers: timestamptz → Date. */
interface IdempotencyRow {
  tenant_id: string;
  key: string;
  fingerprint: string;
  claim_id: string;
  state: IdempotencyRecord['state'];
  response_sealed: string | null;
  created_at: Date;
  locked_until: Date;
  expires_at: Date;
}

function toIdempotencyRecord(row: IdempotencyRow): IdempotencyRecord {
  return {
    tenantId: row.tenant_id,
    key: row.key,
    fingerprint: row.fingerprint,
    claimId: row.claim_id,
    state: row.state,
    responseSealed: row.response_sealed,
    createdAt: row.created_at,
    lockedUntil: row.locked_until,
    expiresAt: row.expires_at,
  };
}

/** A claim is always written in progress and without a response, whatever the record says. */
export function toClaimParams(record: IdempotencyRecord): unknown[] {
  return [
    record.tenantId,
    record.key,
    record.fingerprint,
    record.claimId,
    'in_progress',
    null,
    record.createdAt,
    record.lockedUntil,
    record.expiresAt,
  ];
}

/** The claim statement's own rule for a record that still holds its key at `now`. */
function holds(row: IdempotencyRow, now: Date): boolean {
  if (row.expires_at.getTime() <= now.getTime()) return false;
  return row.state === 'completed' || row.locked_until.getTime() > now.getTime();
}

export async function claimIdempotencyKey(
  ctx: StoreContext,
  record: IdempotencyRecord,
  now: Date,
): Promise<IdempotencyClaimOutcome> {
  const sql = ctx.sql(statements);
  for (let attempt = 0; attempt < RACE_ATTEMPTS; attempt++) {
    const claimed = await ctx.query<{ claim_id: string }>(sql.claim, [...toClaimParams(record), now]);
    if (claimed.rows[0]?.claim_id === record.claimId) return { outcome: 'claimed' };
    // Held: this read, a new statement with a new snapshot, only reports the holder's record as it now is.
    const existing = await ctx.query<IdempotencyRow>(sql.get, [record.tenantId, record.key]);
    const row = existing.rows[0];
    // Released, purged or lapsed since the claim statement: the key may be free, so claim again.
    if (row && holds(row, now)) return { outcome: 'exists', record: toIdempotencyRecord(row) };
  }
  throw unavailable('The Idempotency-Key changed hands too often to be claimed; retry.');
}
