import type {
  DeliveryStatus,
  WebhookDisabledReason,
  WebhookStatus,
  WebhookStatusOutcome,
} from '@keyhook/core/store';
import { claimsTwinKey, DELIVERY_RULES, holdsDeliveries } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  holdDeliveries,
  isActiveTwinViolation,
  resetFailures,
  resetRate,
  webhookById,
} from '../shared-statements.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

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

/** The status and, under the same lock, the webhook's deliveries (docs/decisions.md §10.2), in one transaction. */
export function prepareSetWebhookStatus(
  db: Database.Database,
): Database.Transaction<
  (
    tenantId: string,
    id: string,
    status: WebhookStatus,
    disabledReason: WebhookDisabledReason | null,
    at: number,
  ) => WebhookStatusOutcome
> {
  // `status <> ?`: setting the status a webhook already has matches no row and writes nothing. The
  // claim is the one core's rule gives the new status; a claim another webhook holds fails on the index.
  const setStatus = db.prepare<SetStatusParams, WebhookRow>(
    `UPDATE keyhook_webhooks SET status = ?, disabled_reason = ?, twin_claim = CASE WHEN ? THEN twin_key END,
          updated_at = ?, disabled_at = ?
        WHERE tenant_id = ? AND id = ? AND status <> ? RETURNING ${WEBHOOK_COLUMNS}`,
  );
  const releaseDeliveries = db.prepare<[number, number, string, DeliveryStatus]>(
    `UPDATE keyhook_deliveries SET status = 'pending', due_at = ?, held_since = NULL, updated_at = ?
        WHERE webhook_id = ? AND status = ?`,
  );
  const byId = webhookById(db);
  const hold = holdDeliveries(db);
  const resetCount = resetFailures(db);
  const resetSlots = resetRate(db);
  return db.transaction((tenantId, id, status, disabledReason, at) => {
    let updated: WebhookRow | undefined;
    try {
      const claims = claimsTwinKey(status) ? 1 : 0;
      updated = setStatus.get(
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
      const current = byId.get(tenantId, id);
      return current ? { outcome: 'updated', webhook: toWebhookRecord(current) } : { outcome: 'not_found' };
    }
    // Its deliveries follow under the same lock (docs/decisions.md §10.2): a publish or a lease
    // on another connection sees the status and the queue change together.
    if (holdsDeliveries(status)) {
      hold.run(DELIVERY_RULES.hold.state, at, at, id);
    } else {
      releaseDeliveries.run(at, at, id, DELIVERY_RULES.hold.state);
      resetCount.run(id);
      // The slots given to the deliveries it held were given up (docs/decisions.md §8.18).
      resetSlots.run(id);
    }
    return { outcome: 'updated', webhook: toWebhookRecord(updated) };
  });
}

/** Under BEGIN IMMEDIATE, the lock publishEvent's group and a lease take too. */
export function setWebhookStatus(
  transaction: ReturnType<typeof prepareSetWebhookStatus>,
  tenantId: string,
  id: string,
  status: WebhookStatus,
  disabledReason: WebhookDisabledReason | null,
  at: Date,
): WebhookStatusOutcome {
  return transaction.immediate(tenantId, id, status, disabledReason, at.getTime());
}
