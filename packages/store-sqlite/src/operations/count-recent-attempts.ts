import { type AttemptCounts, DELIVERY_RULES } from '@keyhook/core/store';
import type Database from 'better-sqlite3';

export function prepareCountRecentAttempts(
  db: Database.Database,
): Database.Statement<[number, number, number, number, string, number], AttemptCounts> {
  // The tenant's attempts in the window, from the index of migration 0011 (it holds the status
  // code), each joined to its delivery by primary key for the webhook: the window's rows, never
  // another tenant's. Success is core's DELIVERY_RULES.success, bound here; everything else, no
  // answer included, is a failure. INDEXED BY and CROSS JOIN make that the only plan.
  return db.prepare(
    `SELECT d.webhook_id AS webhookId,
          count(*) FILTER (WHERE a.status_code BETWEEN ? AND ?) AS succeeded,
          count(*) - count(*) FILTER (WHERE a.status_code BETWEEN ? AND ?) AS failed
        FROM keyhook_attempts AS a INDEXED BY keyhook_attempts_tenant_started
        CROSS JOIN keyhook_deliveries AS d ON d.id = a.delivery_id AND d.tenant_id = a.tenant_id
        WHERE a.tenant_id = ? AND a.started_at >= ?
        GROUP BY d.webhook_id
        ORDER BY d.webhook_id`,
  );
}

/** One statement, over the index of migration 0011. */
export function countRecentAttempts(
  counts: ReturnType<typeof prepareCountRecentAttempts>,
  tenantId: string,
  since: Date,
): AttemptCounts[] {
  const { min, max } = DELIVERY_RULES.success;
  return counts.all(min, max, min, max, tenantId, since.getTime());
}
