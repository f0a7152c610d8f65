import type { IdempotencyClaimOutcome, IdempotencyRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  IDEMPOTENCY_COLUMNS,
  type IdempotencyRow,
  toIdempotencyRecord,
  toIdempotencyRow,
} from '../idempotency-row.js';

/** Named parameters of the claim upsert; it writes state and response itself (in progress, none). */
type ClaimParams = IdempotencyRow & { now: number };

/** The claim and, when it wrote nothing, the read of the record that holds the key, in one transaction. */
export function prepareClaimIdempotencyKey(
  db: Database.Database,
): Database.Transaction<(record: IdempotencyRecord, now: number) => IdempotencyClaimOutcome> {
  // The first writer wins: the insert, or taking the place of an expired or abandoned record, is
  // one statement, so SQLite's write lock decides between connections and processes.
  const claim = db
    .prepare<[ClaimParams], string>(
      `INSERT INTO keyhook_idempotency_keys (${IDEMPOTENCY_COLUMNS})
          VALUES (@tenant_id, @key, @fingerprint, @claim_id, 'in_progress', NULL,
            @created_at, @locked_until, @expires_at)
          ON CONFLICT (tenant_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
            claim_id = excluded.claim_id, state = 'in_progress', response_sealed = NULL,
            created_at = excluded.created_at, locked_until = excluded.locked_until,
            expires_at = excluded.expires_at
          WHERE keyhook_idempotency_keys.expires_at <= @now
            OR (keyhook_idempotency_keys.state = 'in_progress' AND keyhook_idempotency_keys.locked_until <= @now)
          RETURNING claim_id`,
    )
    .pluck();
  const byKey = db.prepare<[string, string], IdempotencyRow>(
    `SELECT ${IDEMPOTENCY_COLUMNS} FROM keyhook_idempotency_keys WHERE tenant_id = ? AND key = ?`,
  );
  return db.transaction((record, now) => {
    const holder = claim.get({ ...toIdempotencyRow(record), now });
    if (holder === record.claimId) return { outcome: 'claimed' };
    // The upsert wrote nothing, so a record holds the key; read under the same lock, it is the one that won.
    const existing = byKey.get(record.tenantId, record.key)!;
    return { outcome: 'exists', record: toIdempotencyRecord(existing) };
  });
}

/** Under BEGIN IMMEDIATE: the write lock first. */
export function claimIdempotencyKey(
  transaction: ReturnType<typeof prepareClaimIdempotencyKey>,
  record: IdempotencyRecord,
  now: Date,
): IdempotencyClaimOutcome {
  return transaction.immediate(record, now.getTime());
}
