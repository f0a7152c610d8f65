import type { AttemptCounts } from '@keyhook/core/store';
import { DELIVERY_RULES } from '@keyhook/core/store';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

export const statements = (t: Tables) => ({
  // The tenant's attempts in the window, from the index of migration 0012, each one's webhook
  // read from its delivery by primary key: the work is the window's rows, with statistics or
  // without (docs/decisions.md §8.14). The webhook is a scalar subquery, not a join: analysed,
  // a join hashed all 20,000 deliveries of two tenants to count 200 attempts (measured on
  // the rows of test/portal-storage.test.ts). Success is core's DELIVERY_RULES.success, bound as
  // $3 and $4; everything else, no answer included, is a failure. webhook_id is COLLATE "C", so
  // the order is JavaScript's.
  countRecentAttempts: `SELECT webhook_id AS "webhookId",
        (count(*) FILTER (WHERE status_code BETWEEN $3 AND $4))::integer AS succeeded,
        (count(*) - count(*) FILTER (WHERE status_code BETWEEN $3 AND $4))::integer AS failed
      FROM (
        SELECT a.status_code,
          (SELECT d.webhook_id FROM ${t.deliveries} AS d
            WHERE d.id = a.delivery_id) AS webhook_id
        FROM ${t.attempts} AS a
        WHERE a.tenant_id = $1 AND a.started_at >= $2
      ) AS windowed
      GROUP BY webhook_id
      ORDER BY webhook_id`,
});

/** One statement, over the index of migration 0012. */
export async function countRecentAttempts(
  ctx: StoreContext,
  tenantId: string,
  since: Date,
): Promise<AttemptCounts[]> {
  const { min, max } = DELIVERY_RULES.success;
  const result = await ctx.query<AttemptCounts>(ctx.sql(statements).countRecentAttempts, [
    tenantId,
    since,
    min,
    max,
  ]);
  return result.rows;
}
