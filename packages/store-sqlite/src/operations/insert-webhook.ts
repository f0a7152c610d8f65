import type { IdempotencyCompletion, WebhookRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { completeIdempotency, isActiveTwinViolation } from '../shared-statements.js';
import { toWebhookRow, WEBHOOK_COLUMNS, type WebhookInsertRow } from '../webhook-row.js';

/** The insert and the Idempotency-Key completion, in one transaction: both are written, or neither. */
export function prepareInsertWebhook(
  db: Database.Database,
): Database.Transaction<
  (
    row: WebhookInsertRow,
    completion: IdempotencyCompletion | undefined,
  ) => 'inserted' | 'active_twin' | 'claim_lost'
> {
  // A claim another webhook of the tenant holds fails on keyhook_webhooks_twin_claim (migration 0010).
  const insert = db.prepare<[WebhookInsertRow]>(
    `INSERT INTO keyhook_webhooks (${WEBHOOK_COLUMNS}, twin_claim) VALUES (@id, @tenant_id, @url, @events,
        @twin_key, @status, @disabled_reason, @secret_sealed, @previous_secret_sealed,
        @previous_secret_expires_at, @signature_scheme, @rate_per_second, @public_key, @disabled_at, @description, @created_at, @updated_at,
        @twin_claim)`,
  );
  const idempotencyHeld = db
    .prepare<[string, string, string], number>(
      `SELECT 1 FROM keyhook_idempotency_keys
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
    )
    .pluck();
  const complete = completeIdempotency(db);
  return db.transaction((row, completion) => {
    // Under BEGIN IMMEDIATE no other connection can take the key over between this read and the insert.
    if (completion) {
      const { tenantId, key, claimId } = completion;
      if (!idempotencyHeld.get(tenantId, key, claimId)) return 'claim_lost';
    }
    try {
      insert.run(row);
    } catch (error) {
      // The failed INSERT undid only itself, and nothing else was written yet.
      if (isActiveTwinViolation(error)) return 'active_twin';
      throw error;
    }
    if (completion) {
      const { responseSealed, tenantId, key, claimId } = completion;
      complete.run(responseSealed, tenantId, key, claimId);
    }
    return 'inserted';
  });
}

/** Under BEGIN IMMEDIATE: the write lock first, so nothing waits to upgrade a read lock. */
export function insertWebhook(
  transaction: ReturnType<typeof prepareInsertWebhook>,
  record: WebhookRecord,
  completion: IdempotencyCompletion | undefined,
): 'inserted' | 'active_twin' | 'claim_lost' {
  return transaction.immediate(toWebhookRow(record), completion);
}
