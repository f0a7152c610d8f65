import type { ApiKeyRecord, ListPage } from '@keyhook/core/store';
import { KEY_COLUMNS, type KeyRow, toKeyRecord } from '../key-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  list: `SELECT ${KEY_COLUMNS} FROM ${t.apiKeys}
      WHERE tenant_id = $1 ORDER BY id DESC LIMIT $2`,

  listBefore: `SELECT ${KEY_COLUMNS} FROM ${t.apiKeys}
      WHERE tenant_id = $1 AND id < $3 ORDER BY id DESC LIMIT $2`,
});

export async function listApiKeys(
  ctx: StoreContext,
  tenantId: string,
  page: ListPage,
): Promise<ApiKeyRecord[]> {
  const sql = ctx.sql(statements);
  const result =
    page.before === undefined
      ? await ctx.query<KeyRow>(sql.list, [tenantId, page.limit])
      : await ctx.query<KeyRow>(sql.listBefore, [tenantId, page.limit, page.before]);
  return result.rows.map(toKeyRecord);
}
