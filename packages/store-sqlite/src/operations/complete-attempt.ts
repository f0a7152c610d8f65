import type {
  AttemptCompletion,
  AttemptCompletionOutcome,
  DeliveryStatus,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
} from '@keyhook/core/store';
import { autoDisables, claimsTwinKey, DELIVERY_RULES, queuedOn } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  ATTEMPT_COLUMNS,
  attemptValues,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  placeholdersFor,
  placeParams,
  toDeliveryRecord,
} from '../delivery-row.js';
import { holdDeliveries, resetFailures } from '../shared-statements.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

const { hold } = DELIVERY_RULES;

/** What an attempt makes of its delivery: the columns completeAttempt writes besides the counters. */
interface AttemptOutcomeParams {
  id: string;
  status: DeliveryStatus;
  due_at: number | null;
  held_since: number | null;
  last_attempt_at: number;
  at: number;
}

/** An auto-disable's named parameters: the status and reason core's rules give it, and the claim that status makes. */
interface DisableParams {
  id: string;
  status: WebhookStatus;
  reason: WebhookDisabledReason;
  claims_twin_key: number;
  at: number;
}

/** A success or a permanent failure recorded under its lease, bound by position. */
type FinishLeasedParams = [
  status: 'succeeded' | 'failed',
  lastAttemptAt: number,
  at: number,
  id: string,
  tenantId: string,
  leaseId: string,
];

/** Every statement completeAttempt runs: on the delivery, its attempt log, and its endpoint's failure count. */
export interface CompleteAttemptStatements {
  leaseHolder: Database.Statement<
    [string, string, string],
    { webhook_id: string; webhook_status: WebhookStatus }
  >;
  insertAttempt: Database.Statement<unknown[]>;
  finishLeased: Database.Statement<FinishLeasedParams, DeliveryRow>;
  recordAttempt: Database.Statement<[AttemptOutcomeParams], DeliveryRow>;
  resetFailures: Database.Statement<[string]>;
  countFailure: Database.Statement<[string], { failures: number; status: WebhookStatus }>;
  disableForFailures: Database.Statement<[DisableParams], WebhookRow>;
  holdDeliveries: Database.Statement<[DeliveryStatus, number, number, string]>;
}

export function prepareCompleteAttempt(db: Database.Database): CompleteAttemptStatements {
  return {
    // Only the lease that holds the delivery may record; a delivery gone with its webhook matches nothing.
    leaseHolder: db.prepare(
      `SELECT d.webhook_id, w.status AS webhook_status
        FROM keyhook_deliveries AS d JOIN keyhook_webhooks AS w ON w.id = d.webhook_id
        WHERE d.id = ? AND d.tenant_id = ? AND d.status = 'in_flight' AND d.lease_id = ?`,
    ),
    insertAttempt: db.prepare(
      `INSERT INTO keyhook_attempts (${ATTEMPT_COLUMNS}) VALUES (${placeholdersFor(ATTEMPT_COLUMNS)})`,
    ),
    // A success or a permanent failure: the delivery's end, written only while the lease holds it.
    // Bound by position, as the inserts above: this runs once per delivery.
    finishLeased: db.prepare(
      `UPDATE keyhook_deliveries SET status = ?, due_at = NULL, lease_id = NULL,
          attempts = attempts + 1, last_attempt_at = ?, updated_at = ?
        WHERE id = ? AND tenant_id = ? AND status = 'in_flight' AND lease_id = ?
        RETURNING ${DELIVERY_COLUMNS}`,
    ),
    recordAttempt: db.prepare(
      `UPDATE keyhook_deliveries SET status = @status, due_at = @due_at, lease_id = NULL,
          held_since = @held_since, attempts = attempts + 1, last_attempt_at = @last_attempt_at,
          updated_at = @at
        WHERE id = @id RETURNING ${DELIVERY_COLUMNS}`,
    ),
    resetFailures: resetFailures(db),
    countFailure: db.prepare(
      `UPDATE keyhook_webhooks SET consecutive_failures = consecutive_failures + 1
        WHERE id = ? RETURNING consecutive_failures AS failures, status`,
    ),
    // The status, the reason and the twin claim are core's (DELIVERY_RULES, the completion's rule,
    // claimsTwinKey); whether to disable was decided by core's autoDisables on countFailure's row.
    disableForFailures: db.prepare(
      `UPDATE keyhook_webhooks SET status = @status, disabled_reason = @reason,
          twin_claim = CASE WHEN @claims_twin_key THEN twin_key END, updated_at = @at,
          disabled_at = CASE WHEN @reason IS NULL THEN NULL ELSE @at END
        WHERE id = @id AND status <> @status RETURNING ${WEBHOOK_COLUMNS}`,
    ),
    holdDeliveries: holdDeliveries(db),
  };
}

/**
 * The attempt recorded, as a plain function: the store runs it in a group commit
 * (group-commit.ts), which makes it atomic.
 */
export function completeAttempt(
  sql: CompleteAttemptStatements,
  completion: AttemptCompletion,
): AttemptCompletionOutcome {
  const { tenantId, deliveryId, leaseId } = completion;
  const at = completion.at.getTime();
  const lastAttemptAt = completion.attempt.startedAt.getTime();
  if (completion.status !== 'retry_scheduled') {
    // Whatever the endpoint's status, a success or a permanent failure ends the delivery: the
    // lease check and the write are one statement, and the hold a disable makes (pending and
    // retry_scheduled only) cannot reach a delivery that has ended.
    const row = sql.finishLeased.get(completion.status, lastAttemptAt, at, deliveryId, tenantId, leaseId);
    if (!row) return { outcome: 'lease_lost' };
    sql.insertAttempt.run(attemptValues(completion.attempt, deliveryId));
    const { disabledWebhook } = countEndpointFailures(sql, row.webhook_id, completion, at);
    return { outcome: 'recorded', delivery: toDeliveryRecord(row), disabledWebhook };
  }
  const holder = sql.leaseHolder.get(deliveryId, tenantId, leaseId);
  if (!holder) return { outcome: 'lease_lost' };
  sql.insertAttempt.run(attemptValues(completion.attempt, deliveryId));
  // The endpoint's count first: when it disables the endpoint, the hold (pending and
  // retry_scheduled only) skips this delivery, still in flight, and the retry written after it
  // is held instead. The memory store reaches the same rows the other way round.
  const counted = countEndpointFailures(sql, holder.webhook_id, completion, at);
  // A retry of an endpoint that is disabled by now waits with the rest of its queue.
  const endpointStatus = counted.disabledWebhook?.status ?? holder.webhook_status;
  const place = queuedOn(endpointStatus, 'retry_scheduled', completion.dueAt, completion.at);
  const row = sql.recordAttempt.get({
    id: deliveryId,
    ...placeParams(place),
    last_attempt_at: lastAttemptAt,
    at,
  })!;
  return {
    outcome: 'recorded',
    delivery: toDeliveryRecord(row),
    disabledWebhook: counted.disabledWebhook,
  };
}

/**
 * The endpoint's consecutive-failure count after an attempt (reset, +1 or unchanged); a +1 that
 * core's autoDisables says disables the endpoint disables it and holds its queue.
 */
function countEndpointFailures(
  sql: CompleteAttemptStatements,
  webhookId: string,
  completion: AttemptCompletion,
  at: number,
): { disabledWebhook: WebhookRecord | null } {
  if (completion.endpointFailures === 'reset') sql.resetFailures.run(webhookId);
  if (completion.endpointFailures !== 'increment') return { disabledWebhook: null };
  const counted = sql.countFailure.get(webhookId)!;
  if (!autoDisables(counted.failures, counted.status, completion.autoDisable)) {
    return { disabledWebhook: null };
  }
  const disabled = sql.disableForFailures.get({
    id: webhookId,
    status: hold.endpointStatus,
    reason: completion.autoDisable.reason,
    claims_twin_key: claimsTwinKey(hold.endpointStatus) ? 1 : 0,
    at,
  })!;
  const disabledWebhook = toWebhookRecord(disabled);
  sql.holdDeliveries.run(hold.state, at, at, webhookId);
  return { disabledWebhook };
}
