import type { IdempotencyClaimOutcome, IdempotencyRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  IDEMPOTENCY_COLUMNS,
  type IdempotencyRow,
  toIdempotencyRecord,
  toIdempotencyRow,
} from './idempotency-row.js';

/** Named parameters of the claim upsert; it writes state and response itself (in progress, none). */
type ClaimParams = IdempotencyRow & { now: number };

/** Every statement the store runs on keyhook_idempotency_keys, prepared once on the store's connection. */
export interface IdempotencyStatements {
  claimIdempotency: Database.Statement<[ClaimParams], string>;
  idempotencyByKey: Database.Statement<[string, string], IdempotencyRow>;
  idempotencyHeld: Database.Statement<[string, string, string], number>;
  completeIdempotency: Database.Statement<[string, string, string, string]>;
  releaseIdempotency: Database.Statement<[string, string, string]>;
  purgeIdempotency: Database.Statement<[number]>;
  holdsSealedValues: Database.Statement<[], number>;
}

export function idempotencyStatements(db: Database.Database): IdempotencyStatements {
  return {
    // The first writer wins: the insert, or taking the place of an expired or abandoned record, is
    // one statement, so SQLite's write lock decides between connections and processes.
    claimIdempotency: db
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
      .pluck(),
    idempotencyByKey: db.prepare<[string, string], IdempotencyRow>(
      `SELECT ${IDEMPOTENCY_COLUMNS} FROM keyhook_idempotency_keys WHERE tenant_id = ? AND key = ?`,
    ),
    idempotencyHeld: db
      .prepare<[string, string, string], number>(
        `SELECT 1 FROM keyhook_idempotency_keys
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
      )
      .pluck(),
    completeIdempotency: db.prepare<[string, string, string, string]>(
      `UPDATE keyhook_idempotency_keys SET state = 'completed', response_sealed = ?
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
    ),
    releaseIdempotency: db.prepare<[string, string, string]>(
      `DELETE FROM keyhook_idempotency_keys
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
    ),
    purgeIdempotency: db.prepare<[number]>('DELETE FROM keyhook_idempotency_keys WHERE expires_at <= ?'),
    holdsSealedValues: db
      .prepare<[], number>(
        `SELECT EXISTS (SELECT 1 FROM keyhook_webhooks)
           OR EXISTS (SELECT 1 FROM keyhook_idempotency_keys WHERE response_sealed IS NOT NULL)`,
      )
      .pluck(),
  };
}

/** The Idempotency-Key methods that are more than one statement (see SqliteStore's transactions). */
export interface IdempotencyTransactions {
  claimIdempotencyKey: Database.Transaction<
    (record: IdempotencyRecord, now: number) => IdempotencyClaimOutcome
  >;
}

export function idempotencyTransactions(
  db: Database.Database,
  statements: IdempotencyStatements,
): IdempotencyTransactions {
  return {
    claimIdempotencyKey: db.transaction((record: IdempotencyRecord, now: number): IdempotencyClaimOutcome => {
      const holder = statements.claimIdempotency.get({ ...toIdempotencyRow(record), now });
      if (holder === record.claimId) return { outcome: 'claimed' };
      // The upsert wrote nothing, so a record holds the key; read under the same lock, it is the one that won.
      const existing = statements.idempotencyByKey.get(record.tenantId, record.key)!;
      return { outcome: 'exists', record: toIdempotencyRecord(existing) };
    }),
  };
}
