import type { ApiKeyRecord } from '@keyhook/core/store';
import { KEY_COLUMNS, type KeyRow, oneKey } from '../key-row.js';
import type { Prepare, Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const statements = (t: Tables, prepare: Prepare) => ({
  // Lookup id and hash together: an unknown id and a wrong secret are the same index miss.
  // Prepared: it runs on every key verification.
  findByCredential: prepare(
    `SELECT ${KEY_COLUMNS} FROM ${t.apiKeys} WHERE key_lookup = $1 AND key_hash = $2`,
  ),
});

export async function findApiKeyByCredential(
  ctx: StoreContext,
  keyLookup: string,
  keyHash: string,
): Promise<ApiKeyRecord | null> {
  return oneKey(await ctx.query<KeyRow>(ctx.sql(statements).findByCredential, [keyLookup, keyHash]));
}
