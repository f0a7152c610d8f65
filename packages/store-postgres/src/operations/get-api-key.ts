import type { ApiKeyRecord } from '@keyhook/core/store';
import { KEY_COLUMNS, type KeyRow, oneKey } from '../key-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  get: `SELECT ${KEY_COLUMNS} FROM ${t.apiKeys} WHERE tenant_id = $1 AND id = $2`,
});

export async function getApiKey(
  ctx: StoreContext,
  tenantId: string,
  id: string,
): Promise<ApiKeyRecord | null> {
  return oneKey(await ctx.query<KeyRow>(ctx.sql(statements).get, [tenantId, id]));
}
