import type { ApiKeyChanges, ApiKeyRecord } from '@keyhook/core/store';
import { KEY_COLUMNS, type KeyRow, oneKey } from '../key-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { announced } from './key-change-version.js';

const statements = (t: Tables) => ({
  // $3/$5 say which fields the call changes: a field left out keeps its value. The locked read
  // of the old limit tells whether the limit changed, so the caller knows whether the trigger
  // of migration 0007 announced it.
  update: `WITH old AS (
        SELECT rate_limit, rate_limit_window FROM ${t.apiKeys} WHERE tenant_id = $1 AND id = $2 FOR UPDATE
      )
      UPDATE ${t.apiKeys} AS k
      SET name = CASE WHEN $3::boolean THEN $4::text ELSE k.name END,
          rate_limit = CASE WHEN $5::boolean THEN $6::integer ELSE k.rate_limit END,
          rate_limit_window = CASE WHEN $5::boolean THEN $7::integer ELSE k.rate_limit_window END,
          rate_limit_by_host = CASE WHEN $5::boolean THEN $8::boolean ELSE k.rate_limit_by_host END
      FROM old
      WHERE k.tenant_id = $1 AND k.id = $2
      RETURNING ${KEY_COLUMNS.split(', ')
        .map((column) => `k.${column}`)
        .join(', ')},
        (old.rate_limit IS DISTINCT FROM k.rate_limit
         OR old.rate_limit_window IS DISTINCT FROM k.rate_limit_window) AS limit_changed`,
});

export async function updateApiKey(
  ctx: StoreContext,
  tenantId: string,
  id: string,
  changes: ApiKeyChanges,
): Promise<ApiKeyRecord | null> {
  const limit = changes.rateLimit;
  const params = [
    tenantId,
    id,
    changes.name !== undefined,
    changes.name ?? null,
    limit !== undefined,
    limit?.limit ?? null,
    limit?.window ?? null,
    changes.rateLimitByHost === true,
  ];
  let limitChanged = false;
  const update = async () => {
    const result = await ctx.query<KeyRow & { limit_changed: boolean }>(ctx.sql(statements).update, params);
    limitChanged = result.rows[0]?.limit_changed === true;
    return oneKey(result);
  };
  // Migration 0007's trigger announces a changed limit; a new name, or the same limit, is not announced.
  return announced(ctx, id, update, () => limitChanged);
}
