import type { ApiKeyRecord } from '@keyhook/core/store';
import { KEY_COLUMNS, toKeyParams } from '../key-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables) => ({
  // Any unique clash (lookup id, or id) writes nothing; concurrent inserts wait on the index, one wins.
  insert: `INSERT INTO ${t.apiKeys} (${KEY_COLUMNS})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
      ON CONFLICT DO NOTHING`,
});

export async function insertApiKey(
  ctx: StoreContext,
  record: ApiKeyRecord,
): Promise<'inserted' | 'duplicate_lookup'> {
  const result = await ctx.query(ctx.sql(statements).insert, toKeyParams(record));
  return result.rowCount === 1 ? 'inserted' : 'duplicate_lookup';
}
