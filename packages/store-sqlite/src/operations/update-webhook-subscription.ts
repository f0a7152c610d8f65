import type { SignatureScheme, WebhookSubscription, WebhookSubscriptionOutcome } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { isActiveTwinViolation, resetRate, webhookById } from '../shared-statements.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

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

/**
 * The subscription; with a rate given, the old rate's slots go and what it made wait is due at
 * `at` (docs/decisions.md §8.18), under the same write lock as a lease.
 */
export function prepareUpdateWebhookSubscription(
  db: Database.Database,
): Database.Transaction<
  (tenantId: string, id: string, subscription: WebhookSubscription, at: number) => WebhookSubscriptionOutcome
> {
  // A webhook that claims its twin key claims the new one instead: the claim is carried over, not decided.
  // A NULL scheme keeps the stored one, in this statement (no read-then-write); the rate changes
  // only when the change names one (NULL then removes it).
  const update = db.prepare<SubscriptionParams, WebhookRow>(
    `UPDATE keyhook_webhooks SET url = ?, events = ?, twin_key = ?,
          twin_claim = CASE WHEN twin_claim IS NULL THEN NULL ELSE ? END,
          signature_scheme = coalesce(?, signature_scheme),
          rate_per_second = CASE WHEN ? THEN ? ELSE rate_per_second END,
          description = CASE WHEN ? THEN ? ELSE description END, updated_at = ?
        WHERE tenant_id = ? AND id = ? AND twin_key = ? RETURNING ${WEBHOOK_COLUMNS}`,
  );
  // docs/decisions.md §8.18: a new rate starts afresh. The end of the slots the old one gave out,
  // read before the reset in the same transaction; what waits up to it is due at once.
  const rateQueueAt = db
    .prepare<[string], number | null>('SELECT rate_queue_at FROM keyhook_webhooks WHERE id = ?')
    .pluck();
  const dueWhatTheRateMadeWait = db.prepare<[number, number, string, number, number]>(
    `UPDATE keyhook_deliveries SET due_at = ?, updated_at = ?
        WHERE webhook_id = ? AND status IN ('pending', 'retry_scheduled') AND due_at > ? AND due_at <= ?`,
  );
  const resetSlots = resetRate(db);
  const byId = webhookById(db);
  return db.transaction((tenantId, id, subscription, at) => {
    const changesRate = subscription.deliveryRate !== undefined;
    const queueAt = changesRate ? rateQueueAt.get(id) : null;
    let row: WebhookRow | undefined;
    try {
      row = update.get(
        subscription.url,
        JSON.stringify(subscription.events),
        subscription.twinKey,
        subscription.twinKey,
        subscription.signatureScheme ?? null,
        changesRate ? 1 : 0,
        subscription.deliveryRate?.perSecond ?? null,
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
    if (!row) return byId.get(tenantId, id) ? { outcome: 'stale' } : { outcome: 'not_found' };
    if (changesRate) {
      if (queueAt !== null && queueAt !== undefined)
        // Due times are the slots rounded up to the millisecond, the last one's too.
        dueWhatTheRateMadeWait.run(at, at, id, at, Math.ceil(queueAt));
      resetSlots.run(id);
    }
    return { outcome: 'updated', webhook: toWebhookRecord(row) };
  });
}

/** Under BEGIN IMMEDIATE, the lock a lease takes. */
export function updateWebhookSubscription(
  transaction: ReturnType<typeof prepareUpdateWebhookSubscription>,
  tenantId: string,
  id: string,
  subscription: WebhookSubscription,
  at: Date,
): WebhookSubscriptionOutcome {
  return transaction.immediate(tenantId, id, subscription, at.getTime());
}
