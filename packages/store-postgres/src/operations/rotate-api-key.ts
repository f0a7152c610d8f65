import type { RotateOutcome } from '@keyhook/core/store';
import { KEY_COLUMNS, type KeyRow, oneKey } from '../key-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { getApiKey } from './get-api-key.js';
import { announced } from './key-change-version.js';

const statements = (t: Tables) => ({
  // Compare-and-set: a concurrent rotation holding the row lock makes this re-check the new row and miss.
  rotate: `UPDATE ${t.apiKeys} SET key_hash = $4
      WHERE tenant_id = $1 AND id = $2 AND status = 'active' AND key_hash = $3
      RETURNING ${KEY_COLUMNS}`,
});

export async function rotateApiKey(
  ctx: StoreContext,
  tenantId: string,
  id: string,
  expectedHash: string,
  newHash: string,
): Promise<RotateOutcome> {
  const rotated = await announced(
    ctx,
    id,
    async () =>
      oneKey(await ctx.query<KeyRow>(ctx.sql(statements).rotate, [tenantId, id, expectedHash, newHash])),
    (key) => key !== null,
  );
  if (rotated) return { outcome: 'rotated', key: rotated };
  // The write is already decided; this read, a new statement with a new snapshot, only reports the winner's row.
  const current = await getApiKey(ctx, tenantId, id);
  return current ? { outcome: 'stale', key: current } : { outcome: 'not_found' };
}
