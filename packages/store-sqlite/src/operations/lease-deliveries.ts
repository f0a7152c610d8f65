import type {
  LeasedDelivery,
  LeaseRequest,
  SignatureScheme,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
} from '@keyhook/core/store';
import {
  DELIVERY_RULES,
  ENDPOINT_RATE_RULE,
  paceEndpoint,
  type RateSlots,
  rateWaitOf,
} from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { toDeliveryRecord, toEventRecord } from '../delivery-row.js';
import { boundLimit } from '../shared-statements.js';
import { toWebhookRecord } from '../webhook-row.js';

const { hold } = DELIVERY_RULES;

/**
 * One row of the leasing query: the delivery's id, its event and its webhook, read in one
 * statement. Event and webhook columns carry an `event_` / `webhook_` prefix.
 */
interface DueRow {
  id: string;
  attempts: number;
  last_attempt_at: number | null;
  created_at: number;
  event_tenant_id: string;
  event_id: string;
  event_type: string;
  event_payload: string;
  event_created_at: number;
  event_trace_context: string | null;
  webhook_id: string;
  webhook_tenant_id: string;
  webhook_url: string;
  webhook_events: string;
  webhook_twin_key: string;
  webhook_status: WebhookStatus;
  webhook_disabled_reason: WebhookDisabledReason | null;
  webhook_secret_sealed: string;
  webhook_previous_secret_sealed: string | null;
  webhook_previous_secret_expires_at: number | null;
  webhook_signature_scheme: SignatureScheme;
  webhook_rate_per_second: number | null;
  webhook_public_key: string | null;
  webhook_disabled_at: number | null;
  webhook_description: string | null;
  webhook_created_at: number;
  webhook_updated_at: number;
}

/** An endpoint's rate slot pointers as stored (migration 0013). */
interface RateSlotsRow {
  nextAt: number | null;
  queueAt: number | null;
}

/**
 * The claim's read (dueDeliveries): `skipping` leaves the endpoints of a JSON array bound before
 * the limit.
 */
function dueDeliveriesSql(skipping: boolean): string {
  return `SELECT d.id, d.attempts, d.last_attempt_at, d.created_at,
          e.tenant_id AS event_tenant_id, e.id AS event_id, e.type AS event_type,
          e.payload AS event_payload, e.created_at AS event_created_at,
          e.trace_context AS event_trace_context,
          w.id AS webhook_id, w.tenant_id AS webhook_tenant_id, w.url AS webhook_url,
          w.events AS webhook_events, w.twin_key AS webhook_twin_key, w.status AS webhook_status,
          w.disabled_reason AS webhook_disabled_reason, w.secret_sealed AS webhook_secret_sealed,
          w.previous_secret_sealed AS webhook_previous_secret_sealed,
          w.previous_secret_expires_at AS webhook_previous_secret_expires_at,
          w.signature_scheme AS webhook_signature_scheme, w.rate_per_second AS webhook_rate_per_second,
          w.public_key AS webhook_public_key, w.disabled_at AS webhook_disabled_at, w.description AS webhook_description, w.created_at AS webhook_created_at, w.updated_at AS webhook_updated_at
        FROM keyhook_deliveries AS d INDEXED BY keyhook_deliveries_due
          CROSS JOIN keyhook_webhooks AS w ON w.id = d.webhook_id
          CROSS JOIN keyhook_events AS e ON e.tenant_id = d.tenant_id AND e.id = d.event_id
        WHERE d.due_at <= ? AND w.status <> ?${skipping ? '\n          AND d.webhook_id NOT IN (SELECT value FROM json_each(?))' : ''}
        ORDER BY d.due_at, d.id
        LIMIT ${boundLimit()}`;
}

/** Every statement a claim runs: the due read, the ended leases, the endpoints' rate slots, the lease. */
export interface LeaseDeliveriesStatements {
  dueDeliveries: Database.Statement<[number, WebhookStatus, number], DueRow>;
  dueDeliveriesSkipping: Database.Statement<[number, WebhookStatus, string, number], DueRow>;
  endLease: Database.Statement<[number, string, number, number]>;
  endLeaseOf: Database.Statement<[number, string, string, number]>;
  rateSlots: Database.Statement<[string], RateSlotsRow>;
  advanceRate: Database.Statement<[number | null, number | null, string]>;
  dueOfEndpoint: Database.Statement<[number, string, number], string>;
  waitingAt: Database.Statement<[number, string], number>;
  deferDelivery: Database.Statement<[number, number, string]>;
  lease: Database.Statement<[string, number, number, string]>;
}

export function prepareLeaseDeliveries(db: Database.Database): LeaseDeliveriesStatements {
  return {
    // The plan is pinned, whatever statistics ANALYZE gathers later: INDEXED BY and CROSS JOIN keep
    // the deliveries outermost, walked in order through keyhook_deliveries_due up to the limit, never
    // a scan from the active webhooks and a sort. `due_at <= ?` implies the partial index's
    // `due_at IS NOT NULL`, which is what lets SQLite use it (INDEXED BY would fail at prepare
    // otherwise); a due time means pending, retry_scheduled or in_flight (the table's checks). The
    // endpoint's status that holds its deliveries is core's (DELIVERY_RULES.hold), bound.
    dueDeliveries: db.prepare(dueDeliveriesSql(false)),
    // The same, leaving the endpoints the worker's cap skips (a JSON array of webhook ids): a
    // statement of its own, so the usual claim does not pay for an empty list.
    dueDeliveriesSkipping: db.prepare(dueDeliveriesSql(true)),
    // A lease given up ends now, as if it had run out: the deliveries it still holds are due at once.
    // Only live leases are touched, through the due index (a live lease ends within leaseMs).
    endLease: db.prepare(
      `UPDATE keyhook_deliveries INDEXED BY keyhook_deliveries_due SET due_at = ?
        WHERE lease_id = ? AND status = 'in_flight' AND due_at > ? AND due_at <= ?`,
    ),
    endLeaseOf: db.prepare(
      `UPDATE keyhook_deliveries SET due_at = ?
        WHERE id = ? AND lease_id = ? AND status = 'in_flight' AND due_at > ?`,
    ),
    // docs/decisions.md §8.18: a limited endpoint's slot pointers, read and written under the
    // lease's write lock, so every connection's claims share one pace.
    rateSlots: db.prepare(
      'SELECT rate_next_at AS nextAt, rate_queue_at AS queueAt FROM keyhook_webhooks WHERE id = ?',
    ),
    advanceRate: db.prepare('UPDATE keyhook_webhooks SET rate_next_at = ?, rate_queue_at = ? WHERE id = ?'),
    // An endpoint's due deliveries, in the claim's order, by the due index (a due time means a
    // queued or in-flight delivery, as in dueDeliveries): those the claim gives slots beyond its limit.
    dueOfEndpoint: db
      .prepare<[number, string, number], string>(
        `SELECT d.id FROM keyhook_deliveries AS d INDEXED BY keyhook_deliveries_due
          WHERE d.due_at <= ? AND d.webhook_id = ? ORDER BY d.due_at, d.id LIMIT ${boundLimit()}`,
      )
      .pluck(),
    // Whether a delivery of the endpoint already waits for the slot due then (paceEndpoint's
    // slotTaken), by the due index: queued rows with that due time, one webhook's among them.
    waitingAt: db
      .prepare<[number, string], number>(
        `SELECT 1 FROM keyhook_deliveries AS d INDEXED BY keyhook_deliveries_due
          WHERE d.due_at = ? AND d.webhook_id = ? AND (d.status = 'pending' OR d.status = 'retry_scheduled')
          LIMIT 1`,
      )
      .pluck(),
    // Not leased: due again at its slot, status and attempts as they were.
    deferDelivery: db.prepare('UPDATE keyhook_deliveries SET due_at = ?, updated_at = ? WHERE id = ?'),
    // Read under the same write lock: the leased record is the due row with these columns set.
    lease: db.prepare(
      `UPDATE keyhook_deliveries SET status = 'in_flight', lease_id = ?, due_at = ?, updated_at = ?
        WHERE id = ?`,
    ),
  };
}

/**
 * The claim, as a plain function: the store runs it in a group commit (group-commit.ts), which
 * makes it atomic. The read and the claim share the write lock: another connection's lease waits
 * for this one to commit, and then finds these deliveries in flight with a live lease.
 */
export function leaseDeliveries(sql: LeaseDeliveriesStatements, request: LeaseRequest): LeasedDelivery[] {
  const now = request.now.getTime();
  const leaseEnd = now + request.leaseMs;
  // One record per webhook: under this transaction's lock its row is the same for every delivery.
  const webhooks = new Map<string, WebhookRecord>();
  const rule = request.rate ?? ENDPOINT_RATE_RULE;
  for (const ended of request.endLeases ?? []) {
    if (ended.deliveryId === undefined) sql.endLease.run(now, ended.leaseId, now, leaseEnd);
    else sql.endLeaseOf.run(now, ended.deliveryId, ended.leaseId, now);
  }
  const skip = request.skipEndpoints ?? [];
  const due =
    skip.length === 0
      ? sql.dueDeliveries.all(now, hold.endpointStatus, request.limit)
      : sql.dueDeliveriesSkipping.all(now, hold.endpointStatus, JSON.stringify(skip), request.limit);
  // docs/decisions.md §8.18: each limited endpoint's due deliveries, in due order, paced at once,
  // its slots read and written under this claim's write lock.
  const limited = new Map<string, DueRow[]>();
  for (const row of due) {
    if (row.webhook_rate_per_second !== null)
      limited.set(row.webhook_id, [...(limited.get(row.webhook_id) ?? []), row]);
  }
  const met = new Set(due.map((row) => row.id));
  const refused = new Set<string>();
  const nextSlots: number[] = [];
  for (const [webhookId, rows] of limited) {
    const slots: RateSlots = { ...sql.rateSlots.get(webhookId)! };
    const limit = { perSecond: rows[0]!.webhook_rate_per_second! };
    // Up to `spread` more of its due deliveries, beyond the limit, are given their slots too.
    const ids = rows.map((row) => row.id);
    for (const id of sql.dueOfEndpoint.all(now, webhookId, met.size + rule.spread)) {
      if (ids.length - rows.length >= rule.spread) break;
      if (!met.has(id)) ids.push(id);
    }
    const waitingAt = (dueAt: number) => sql.waitingAt.get(dueAt, webhookId) !== undefined;
    paceEndpoint(slots, limit, now, rule, ids.length, waitingAt).forEach((decision, i) => {
      if (decision.lease) return;
      refused.add(ids[i]!);
      sql.deferDelivery.run(decision.dueAt, now, ids[i]!);
    });
    sql.advanceRate.run(slots.nextAt, slots.queueAt, webhookId);
    nextSlots.push(slots.nextAt ?? now);
  }
  if (limited.size > 0) request.onRateWait?.(rateWaitOf(refused.size, nextSlots));
  return due
    .filter((row) => !refused.has(row.id))
    .map((row) => {
      sql.lease.run(request.leaseId, leaseEnd, now, row.id);
      return toLeasedDelivery(row, request.leaseId, leaseEnd, now, webhooks);
    });
}

/**
 * The due delivery as the lease wrote it, with the event and webhook read beside it. `webhooks`
 * holds the records already made in this lease, by id.
 */
function toLeasedDelivery(
  due: DueRow,
  leaseId: string,
  leaseEnd: number,
  now: number,
  webhooks: Map<string, WebhookRecord>,
): LeasedDelivery {
  let webhook = webhooks.get(due.webhook_id);
  if (webhook === undefined) {
    webhook = toWebhookRecord({
      id: due.webhook_id,
      tenant_id: due.webhook_tenant_id,
      url: due.webhook_url,
      events: due.webhook_events,
      twin_key: due.webhook_twin_key,
      status: due.webhook_status,
      disabled_reason: due.webhook_disabled_reason,
      secret_sealed: due.webhook_secret_sealed,
      previous_secret_sealed: due.webhook_previous_secret_sealed,
      previous_secret_expires_at: due.webhook_previous_secret_expires_at,
      signature_scheme: due.webhook_signature_scheme,
      rate_per_second: due.webhook_rate_per_second,
      public_key: due.webhook_public_key,
      disabled_at: due.webhook_disabled_at,
      description: due.webhook_description,
      created_at: due.webhook_created_at,
      updated_at: due.webhook_updated_at,
    });
    webhooks.set(due.webhook_id, webhook);
  }
  return {
    delivery: toDeliveryRecord({
      id: due.id,
      tenant_id: due.event_tenant_id,
      webhook_id: due.webhook_id,
      event_id: due.event_id,
      event_type: due.event_type,
      status: 'in_flight',
      attempts: due.attempts,
      due_at: leaseEnd,
      lease_id: leaseId,
      held_since: null,
      last_attempt_at: due.last_attempt_at,
      created_at: due.created_at,
      updated_at: now,
    }),
    event: toEventRecord({
      tenant_id: due.event_tenant_id,
      id: due.event_id,
      type: due.event_type,
      payload: due.event_payload,
      created_at: due.event_created_at,
      trace_context: due.event_trace_context,
    }),
    webhook,
  };
}
