import type { ApiKeyRecord } from '@keyhook/core/store';
import { KEY_COLUMNS, type KeyRow, oneKey } from '../key-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { announced } from './key-change-version.js';

const statements = (t: Tables) => ({
  // The row lock and the CASE see the latest committed row, so a racing revoke's revoked_at is kept
  // and the row returned is the row as it now is (a fallback SELECT would read the older snapshot).
  revoke: `UPDATE ${t.apiKeys}
      SET status = 'revoked',
          revoked_at = CASE WHEN status = 'active' THEN $3::timestamptz ELSE revoked_at END
      WHERE tenant_id = $1 AND id = $2
      RETURNING ${KEY_COLUMNS}`,
});

export async function revokeApiKey(
  ctx: StoreContext,
  tenantId: string,
  id: string,
  at: Date,
): Promise<ApiKeyRecord | null> {
  return announced(
    ctx,
    id,
    async () => oneKey(await ctx.query<KeyRow>(ctx.sql(statements).revoke, [tenantId, id, at])),
    // This call revoked it (rather than finding it revoked) when the stamp is its own.
    (key) => key?.revokedAt?.getTime() === at.getTime(),
  );
}
