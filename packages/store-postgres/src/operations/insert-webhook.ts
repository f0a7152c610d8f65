import type { IdempotencyCompletion, WebhookRecord } from '@keyhook/core/store';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { toWebhookParams, WEBHOOK_COLUMNS } from '../webhook-row.js';

export const statements = (t: Tables) => ({
  // The arbiter is the twin-claim index only: concurrent claims of one key wait on it and one wins, while an
  // id clash still raises (a bug, not a twin). $18 is the claim core's rule gives the status (toWebhookParams);
  // a row that claims nothing (NULL) never conflicts.
  insert: `INSERT INTO ${t.webhooks} (${WEBHOOK_COLUMNS}, twin_claim)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
      ON CONFLICT (tenant_id, twin_claim) DO NOTHING
      RETURNING id`,

  // One statement, so the check, the webhook and the completion commit together or not at all. `held`
  // locks the claim's idempotency row FOR UPDATE: a takeover (the claim upsert locks that row too) waits
  // for this statement's commit, and then finds the key completed. When a takeover, release or completion
  // got there first, FOR UPDATE re-checks the row's latest committed version (not the snapshot's) and
  // finds nothing, so the insert writes nothing. The completion runs only when the insert wrote a row.
  insertCompleting: `WITH held AS MATERIALIZED (
        SELECT 1 FROM ${t.idempotencyKeys}
        WHERE tenant_id = $19 AND key = $20 AND claim_id = $21 AND state = 'in_progress'
        FOR UPDATE
      ),
      inserted AS (
        INSERT INTO ${t.webhooks} (${WEBHOOK_COLUMNS}, twin_claim)
        SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18
        WHERE EXISTS (SELECT 1 FROM held)
        ON CONFLICT (tenant_id, twin_claim) DO NOTHING
        RETURNING id
      ),
      completed AS (
        UPDATE ${t.idempotencyKeys} SET state = 'completed', response_sealed = $22
        WHERE tenant_id = $19 AND key = $20 AND claim_id = $21 AND state = 'in_progress'
          AND EXISTS (SELECT 1 FROM inserted)
      )
      SELECT (SELECT count(*) FROM held)::int AS held, (SELECT count(*) FROM inserted)::int AS inserted`,
});

export async function insertWebhook(
  ctx: StoreContext,
  record: WebhookRecord,
  completion?: IdempotencyCompletion,
): Promise<'inserted' | 'active_twin' | 'claim_lost'> {
  const sql = ctx.sql(statements);
  if (!completion) {
    const result = await ctx.query(sql.insert, toWebhookParams(record));
    return result.rowCount === 1 ? 'inserted' : 'active_twin';
  }
  const result = await ctx.query<{ held: number; inserted: number }>(sql.insertCompleting, [
    ...toWebhookParams(record),
    completion.tenantId,
    completion.key,
    completion.claimId,
    completion.responseSealed,
  ]);
  const counts = result.rows[0];
  if (!counts || counts.held === 0) return 'claim_lost';
  return counts.inserted === 0 ? 'active_twin' : 'inserted';
}
