import type { DeliveryStatus, ListPage } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  DELIVERY_COLUMNS,
  type DeliveryRow,
  EVENT_COLUMNS,
  type EventRow,
  placeholdersFor,
} from './delivery-row.js';
import { type ApiKeyRow, KEY_COLUMNS } from './key-row.js';
import { WEBHOOK_COLUMNS, type WebhookRow } from './webhook-row.js';

// The statements that several operations run (operations/, one module per Store method). Each
// operation that runs one prepares it among its own, once on the store's connection; a statement
// that one operation alone runs lives in that operation's module.

/**
 * A bound LIMIT: `LIMIT ${boundLimit()}`, or `boundLimit('@limit')` for a named one; never a bare
 * `LIMIT ?` (docs/decisions.md §8.13 says why).
 */
export const boundLimit = (parameter = '?'): string => `+${parameter}`;

/** A key of the tenant: getApiKey, and the read that says what a key write left unchanged. */
export function apiKeyById(db: Database.Database): Database.Statement<[string, string], ApiKeyRow> {
  return db.prepare(`SELECT ${KEY_COLUMNS} FROM keyhook_api_keys WHERE tenant_id = ? AND id = ?`);
}

/** A tenant's listing of one table, newest first (ids descending): the first page, and a page after an id. */
export interface TenantListing<Row> {
  first: Database.Statement<[tenantId: string, limit: number], Row>;
  before: Database.Statement<[tenantId: string, before: string, limit: number], Row>;
}

/** listApiKeys and listWebhooks: the tenant's rows of `table`, by id. */
export function tenantListing<Row>(
  db: Database.Database,
  table: string,
  columns: string,
): TenantListing<Row> {
  return {
    first: db.prepare(
      `SELECT ${columns} FROM ${table} WHERE tenant_id = ? ORDER BY id DESC LIMIT ${boundLimit()}`,
    ),
    before: db.prepare(
      `SELECT ${columns} FROM ${table} WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ${boundLimit()}`,
    ),
  };
}

/** One page of a tenant listing. */
export function listingPage<Row>(sql: TenantListing<Row>, tenantId: string, page: ListPage): Row[] {
  return page.before === undefined
    ? sql.first.all(tenantId, page.limit)
    : sql.before.all(tenantId, page.before, page.limit);
}

/** A webhook of the tenant: getWebhook, and the reads made under the lock a status change takes. */
export function webhookById(db: Database.Database): Database.Statement<[string, string], WebhookRow> {
  return db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks WHERE tenant_id = ? AND id = ?`);
}

/** An event of the tenant: the one a duplicate publish met, and a delivery's event. */
export function eventById(db: Database.Database): Database.Statement<[string, string], EventRow> {
  return db.prepare(`SELECT ${EVENT_COLUMNS} FROM keyhook_events WHERE tenant_id = ? AND id = ?`);
}

/** A delivery of the tenant's webhook: getDelivery, and requeueDelivery's read of its status. */
export function deliveryById(
  db: Database.Database,
): Database.Statement<[string, string, string], DeliveryRow> {
  return db.prepare(
    `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries WHERE tenant_id = ? AND webhook_id = ? AND id = ?`,
  );
}

/** A new delivery, bound by position (deliveryValues): publishEvent and publishTestEvent. */
export function insertDelivery(db: Database.Database): Database.Statement<unknown[]> {
  return db.prepare(
    `INSERT INTO keyhook_deliveries (${DELIVERY_COLUMNS}) VALUES (${placeholdersFor(DELIVERY_COLUMNS)})`,
  );
}

/**
 * A disabled endpoint's queue waits: nothing pending or scheduled stays leasable (setWebhookStatus,
 * and completeAttempt's auto-disable). The held state is core's (DELIVERY_RULES.hold), bound, as
 * everywhere the store writes or releases it.
 */
export function holdDeliveries(
  db: Database.Database,
): Database.Statement<[DeliveryStatus, number, number, string]> {
  return db.prepare(
    `UPDATE keyhook_deliveries SET status = ?, due_at = NULL, held_since = ?, updated_at = ?
        WHERE webhook_id = ? AND status IN ('pending', 'retry_scheduled')`,
  );
}

/**
 * The endpoint's consecutive-failure count back to 0 (a success, or the endpoint enabled again).
 * Most successes follow successes: a count already at 0 is left unwritten.
 */
export function resetFailures(db: Database.Database): Database.Statement<[string]> {
  return db.prepare(
    'UPDATE keyhook_webhooks SET consecutive_failures = 0 WHERE id = ? AND consecutive_failures <> 0',
  );
}

/** The endpoint's rate slots given up: its pace starts afresh (docs/decisions.md §8.18). */
export function resetRate(db: Database.Database): Database.Statement<[string]> {
  return db.prepare('UPDATE keyhook_webhooks SET rate_next_at = NULL, rate_queue_at = NULL WHERE id = ?');
}

/**
 * The answer stored and the Idempotency-Key completed, only while the claim still holds it in
 * progress: completeIdempotencyKey, and insertWebhook's completion in the same transaction.
 */
export function completeIdempotency(
  db: Database.Database,
): Database.Statement<[responseSealed: string, tenantId: string, key: string, claimId: string]> {
  return db.prepare(
    `UPDATE keyhook_idempotency_keys SET state = 'completed', response_sealed = ?
        WHERE tenant_id = ? AND key = ? AND claim_id = ? AND state = 'in_progress'`,
  );
}

/** The unique index keyhook_webhooks_twin_claim refused a second claim of a twin key; a clashing id is a bug. */
export function isActiveTwinViolation(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return (
    code === 'SQLITE_CONSTRAINT_UNIQUE' &&
    typeof message === 'string' &&
    message.includes('keyhook_webhooks.tenant_id, keyhook_webhooks.twin_claim')
  );
}
