import type {
  IdempotencyCompletion,
  SignatureScheme,
  WebhookDisabledReason,
  WebhookStatus,
  WebhookStatusOutcome,
  WebhookSubscription,
  WebhookSubscriptionOutcome,
} from '@keyhook/core/store';
import { claimsTwinKey, DELIVERY_RULES, holdsDeliveries } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import type { DeliveryStatements } from './delivery-statements.js';
import type { IdempotencyStatements } from './idempotency-statements.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookInsertRow, type WebhookRow } from './webhook-row.js';

/** The unique index keyhook_webhooks_twin_claim refused a second claim of a twin key; a clashing id is a bug. */
export function isActiveTwinViolation(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return (
    code === 'SQLITE_CONSTRAINT_UNIQUE' &&
    typeof message === 'string' &&
    message.includes('keyhook_webhooks.tenant_id, keyhook_webhooks.twin_claim')
  );
}

/** A status change's positional parameters: the status, its reason, whether it claims the twin key (1/0), when. */
type SetStatusParams = [
  status: WebhookStatus,
  disabledReason: WebhookDisabledReason | null,
  claimsTwinKey: number,
  at: number,
  disabledAt: number | null,
  tenantId: string,
  id: string,
  unlessStatus: WebhookStatus,
];

/** A subscription change's positional parameters; the new twin key twice (as the key, and as a claim carried over). */
type SubscriptionParams = [
  url: string,
  events: string,
  twinKey: string,
  twinClaim: string,
  signatureScheme: SignatureScheme | null,
  changesRate: number,
  ratePerSecond: number | null,
  changesDescription: number,
  description: string | null,
  at: number,
  tenantId: string,
  id: string,
  from: string,
];

/** A rotation's named parameters. */
interface RotateSecretParams {
  secret_sealed: string;
  public_key: string | null;
  previous_expires_at: number | null;
  updated_at: number;
  tenant_id: string;
  id: string;
}

/** Every statement the store runs on keyhook_webhooks, prepared once on the store's connection. */
export interface WebhookStatements {
  insertWebhook: Database.Statement<[WebhookInsertRow]>;
  webhookById: Database.Statement<[string, string], WebhookRow>;
  listWebhooksFirst: Database.Statement<[string, number], WebhookRow>;
  listWebhooksBefore: Database.Statement<[string, string, number], WebhookRow>;
  setWebhookStatus: Database.Statement<SetStatusParams, WebhookRow>;
  updateWebhookSubscription: Database.Statement<SubscriptionParams, WebhookRow>;
  rateQueueAt: Database.Statement<[string], number | null>;
  dueWhatTheRateMadeWait: Database.Statement<[number, number, string, number, number]>;
  resetRate: Database.Statement<[string]>;
  rotateWebhookSecret: Database.Statement<RotateSecretParams, WebhookRow>;
  deleteWebhook: Database.Statement<[string, string]>;
  deleteWebhookAttempts: Database.Statement<[string]>;
  deleteWebhookDeliveries: Database.Statement<[string]>;
}

export function webhookStatements(db: Database.Database): WebhookStatements {
  return {
    // A claim another webhook of the tenant holds fails on keyhook_webhooks_twin_claim (migration 0010).
    insertWebhook: db.prepare<[WebhookInsertRow]>(
      `INSERT INTO keyhook_webhooks (${WEBHOOK_COLUMNS}, twin_claim) VALUES (@id, @tenant_id, @url, @events,
        @twin_key, @status, @disabled_reason, @secret_sealed, @previous_secret_sealed,
        @previous_secret_expires_at, @signature_scheme, @rate_per_second, @public_key, @disabled_at, @description, @created_at, @updated_at,
        @twin_claim)`,
    ),
    webhookById: db.prepare<[string, string], WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks WHERE tenant_id = ? AND id = ?`,
    ),
    listWebhooksFirst: db.prepare<[string, number], WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks WHERE tenant_id = ? ORDER BY id DESC LIMIT ?`,
    ),
    listWebhooksBefore: db.prepare<[string, string, number], WebhookRow>(
      `SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
    ),
    // `status <> ?`: setting the status a webhook already has matches no row and writes nothing. The
    // claim is the one core's rule gives the new status; a claim another webhook holds fails on the index.
    setWebhookStatus: db.prepare<SetStatusParams, WebhookRow>(
      `UPDATE keyhook_webhooks SET status = ?, disabled_reason = ?, twin_claim = CASE WHEN ? THEN twin_key END,
          updated_at = ?, disabled_at = ?
        WHERE tenant_id = ? AND id = ? AND status <> ? RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    // A webhook that claims its twin key claims the new one instead: the claim is carried over, not decided.
    // A NULL scheme keeps the stored one, in this statement (no read-then-write); the rate changes
    // only when the change names one (NULL then removes it).
    updateWebhookSubscription: db.prepare<SubscriptionParams, WebhookRow>(
      `UPDATE keyhook_webhooks SET url = ?, events = ?, twin_key = ?,
          twin_claim = CASE WHEN twin_claim IS NULL THEN NULL ELSE ? END,
          signature_scheme = coalesce(?, signature_scheme),
          rate_per_second = CASE WHEN ? THEN ? ELSE rate_per_second END,
          description = CASE WHEN ? THEN ? ELSE description END, updated_at = ?
        WHERE tenant_id = ? AND id = ? AND twin_key = ? RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    // docs/decisions.md §8.18: a new rate starts afresh. The end of the slots the old one gave out,
    // read before the reset in the same transaction; what waits up to it is due at once.
    rateQueueAt: db
      .prepare<[string], number | null>('SELECT rate_queue_at FROM keyhook_webhooks WHERE id = ?')
      .pluck(),
    dueWhatTheRateMadeWait: db.prepare<[number, number, string, number, number]>(
      `UPDATE keyhook_deliveries SET due_at = ?, updated_at = ?
        WHERE webhook_id = ? AND status IN ('pending', 'retry_scheduled') AND due_at > ? AND due_at <= ?`,
    ),
    resetRate: db.prepare<[string]>(
      'UPDATE keyhook_webhooks SET rate_next_at = NULL, rate_queue_at = NULL WHERE id = ?',
    ),
    // One statement: the right-hand sides read the row as it was, so with an expiry the previous
    // secret is the sealed value this replaces, exactly as stored; without one, both are cleared.
    rotateWebhookSecret: db.prepare<RotateSecretParams, WebhookRow>(
      `UPDATE keyhook_webhooks SET secret_sealed = @secret_sealed, public_key = @public_key,
          previous_secret_sealed = CASE WHEN @previous_expires_at IS NULL THEN NULL ELSE secret_sealed END,
          previous_secret_expires_at = @previous_expires_at, updated_at = @updated_at
        WHERE tenant_id = @tenant_id AND id = @id RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    deleteWebhook: db.prepare<[string, string]>(
      'DELETE FROM keyhook_webhooks WHERE tenant_id = ? AND id = ?',
    ),
    // deleteWebhook's own cleanup: the foreign keys cascade only on connections with foreign_keys on.
    deleteWebhookAttempts: db.prepare<[string]>(
      `DELETE FROM keyhook_attempts
        WHERE delivery_id IN (SELECT id FROM keyhook_deliveries WHERE webhook_id = ?)`,
    ),
    deleteWebhookDeliveries: db.prepare<[string]>('DELETE FROM keyhook_deliveries WHERE webhook_id = ?'),
  };
}

/** The webhook methods that are more than one statement (see SqliteStore's transactions). */
export interface WebhookTransactions {
  insertWebhook: Database.Transaction<
    (
      row: WebhookInsertRow,
      completion: IdempotencyCompletion | undefined,
    ) => 'inserted' | 'active_twin' | 'claim_lost'
  >;
  setWebhookStatus: Database.Transaction<
    (
      tenantId: string,
      id: string,
      status: WebhookStatus,
      disabledReason: WebhookDisabledReason | null,
      at: number,
    ) => WebhookStatusOutcome
  >;
  updateWebhookSubscription: Database.Transaction<
    (
      tenantId: string,
      id: string,
      subscription: WebhookSubscription,
      at: number,
    ) => WebhookSubscriptionOutcome
  >;
  deleteWebhook: Database.Transaction<(tenantId: string, id: string) => boolean>;
}

export function webhookTransactions(
  db: Database.Database,
  statements: WebhookStatements,
  deliverySql: DeliveryStatements,
  idempotencySql: IdempotencyStatements,
): WebhookTransactions {
  return {
    // The webhook and its Idempotency-Key completion commit together or not at all.
    insertWebhook: db.transaction(
      (
        row: WebhookInsertRow,
        completion: IdempotencyCompletion | undefined,
      ): 'inserted' | 'active_twin' | 'claim_lost' => {
        // Under BEGIN IMMEDIATE no other connection can take the key over between this read and the insert.
        if (completion) {
          const { tenantId, key, claimId } = completion;
          if (!idempotencySql.idempotencyHeld.get(tenantId, key, claimId)) return 'claim_lost';
        }
        try {
          statements.insertWebhook.run(row);
        } catch (error) {
          // The failed INSERT undid only itself, and nothing else was written yet.
          if (isActiveTwinViolation(error)) return 'active_twin';
          throw error;
        }
        if (completion) {
          const { responseSealed, tenantId, key, claimId } = completion;
          idempotencySql.completeIdempotency.run(responseSealed, tenantId, key, claimId);
        }
        return 'inserted';
      },
    ),
    setWebhookStatus: db.transaction(
      (
        tenantId: string,
        id: string,
        status: WebhookStatus,
        disabledReason: WebhookDisabledReason | null,
        at: number,
      ): WebhookStatusOutcome => {
        let updated: WebhookRow | undefined;
        try {
          const claims = claimsTwinKey(status) ? 1 : 0;
          updated = statements.setWebhookStatus.get(
            status,
            disabledReason,
            claims,
            at,
            disabledReason === null ? null : at,
            tenantId,
            id,
            status,
          );
        } catch (error) {
          if (isActiveTwinViolation(error)) return { outcome: 'active_twin' };
          throw error;
        }
        if (!updated) {
          // Nothing matched: the webhook already has this status (returned as it is, its deliveries
          // untouched), or there is none.
          const current = statements.webhookById.get(tenantId, id);
          return current
            ? { outcome: 'updated', webhook: toWebhookRecord(current) }
            : { outcome: 'not_found' };
        }
        // Its deliveries follow under the same lock (docs/decisions.md §10.2): a publish or a lease
        // on another connection sees the status and the queue change together.
        if (holdsDeliveries(status)) {
          deliverySql.holdDeliveries.run(DELIVERY_RULES.hold.state, at, at, id);
        } else {
          deliverySql.releaseDeliveries.run(at, at, id, DELIVERY_RULES.hold.state);
          deliverySql.resetFailures.run(id);
          // The slots given to the deliveries it held were given up (docs/decisions.md §8.18).
          statements.resetRate.run(id);
        }
        return { outcome: 'updated', webhook: toWebhookRecord(updated) };
      },
    ),
    // The subscription; with a rate given, the old rate's slots go and what it made wait is due
    // at `at` (docs/decisions.md §8.18), under the same write lock as a lease.
    updateWebhookSubscription: db.transaction(
      (
        tenantId: string,
        id: string,
        subscription: WebhookSubscription,
        at: number,
      ): WebhookSubscriptionOutcome => {
        const changesRate = subscription.rateLimit !== undefined;
        const queueAt = changesRate ? statements.rateQueueAt.get(id) : null;
        let row: WebhookRow | undefined;
        try {
          row = statements.updateWebhookSubscription.get(
            subscription.url,
            JSON.stringify(subscription.events),
            subscription.twinKey,
            subscription.twinKey,
            subscription.signatureScheme ?? null,
            changesRate ? 1 : 0,
            subscription.rateLimit?.perSecond ?? null,
            subscription.description === undefined ? 0 : 1,
            subscription.description ?? null,
            at,
            tenantId,
            id,
            subscription.from,
          );
        } catch (error) {
          // The active-twin index refused it: nothing was written.
          if (isActiveTwinViolation(error)) return { outcome: 'active_twin' };
          throw error;
        }
        if (!row)
          return statements.webhookById.get(tenantId, id) ? { outcome: 'stale' } : { outcome: 'not_found' };
        if (changesRate) {
          if (queueAt !== null && queueAt !== undefined)
            // Due times are the slots rounded up to the millisecond, the last one's too.
            statements.dueWhatTheRateMadeWait.run(at, at, id, at, Math.ceil(queueAt));
          statements.resetRate.run(id);
        }
        return { outcome: 'updated', webhook: toWebhookRecord(row) };
      },
    ),
    // The webhook, its deliveries and their attempts go together. The foreign keys would cascade,
    // but only where foreign_keys is on; a caller's own connection may have it off.
    deleteWebhook: db.transaction((tenantId: string, id: string): boolean => {
      if (statements.deleteWebhook.run(tenantId, id).changes === 0) return false;
      // Webhook ids are unique across tenants: once the tenant's webhook went, these rows are all its own.
      statements.deleteWebhookAttempts.run(id);
      statements.deleteWebhookDeliveries.run(id);
      return true;
    }),
  };
}
