import type { WebhookRecord } from '@keyhook/core/store';
import type { Queryable } from './host-transaction.js';
import type { StoreContext } from './store-context.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from './webhook-row.js';

/**
 * The version of a webhook row as a statement reads it: its `xmin`, the transaction that wrote
 * that version of the row. Every UPDATE writes a new version, and two committed versions of one
 * row never share a writer, so one id and one version are always the same columns.
 */
export const WEBHOOK_VERSION = 'xmin::text';

/** Endpoints a store remembers; emptied when full, as a worker's secrets are. */
const ENTRIES = 1000;

/**
 * The endpoints of the deliveries a store leases (in a publish, or by a claim), each with the
 * version of its row it was read at (docs/decisions.md §8.14). A publish or a claim answers with
 * an endpoint's id and version only; the columns come from here while the row is unchanged, and
 * from one SELECT of the changed and unknown ones otherwise.
 */
export class WebhookCache {
  private readonly entries = new Map<string, { version: string; webhook: WebhookRecord }>();

  /**
   * The webhook of each [tenant, id, version], in order: the one remembered at that version, or
   * the row as it is now, which a publish that committed first may hand its worker as a claim
   * made now would. Null for one deleted since (its deliveries went with it), or of another tenant.
   */
  async resolve(
    ctx: StoreContext,
    client: Queryable,
    wanted: readonly (readonly [tenantId: string, id: string, version: string])[],
  ): Promise<(WebhookRecord | null)[]> {
    const known = (tenantId: string, id: string, version: string) => {
      const entry = this.entries.get(id);
      return entry?.version === version && entry.webhook.tenantId === tenantId ? entry.webhook : undefined;
    };
    // Each missing id, with the tenant it is read for.
    const missing = new Map<string, string>();
    for (const [tenantId, id, version] of wanted)
      if (known(tenantId, id, version) === undefined) missing.set(id, tenantId);
    const fetched = new Map<string, WebhookRecord>();
    if (missing.size > 0) {
      const result = await ctx.run<WebhookRow & { version: string }>(client, ctx.sql(statements).webhooks, [
        [...missing.values()],
        [...missing.keys()],
      ]);
      for (const row of result.rows) {
        const webhook = Object.freeze(toWebhookRecord(row));
        Object.freeze(webhook.events);
        fetched.set(webhook.id, webhook);
        this.remember(webhook, row.version);
      }
      for (const id of missing.keys()) if (!fetched.has(id)) this.entries.delete(id);
    }
    return wanted.map(([tenantId, id, version]) => {
      const webhook = known(tenantId, id, version) ?? fetched.get(id);
      return webhook?.tenantId === tenantId ? webhook : null;
    });
  }

  private remember(webhook: WebhookRecord, version: string): void {
    if (!this.entries.has(webhook.id) && this.entries.size >= ENTRIES) this.entries.clear();
    this.entries.set(webhook.id, { version, webhook });
  }
}

const statements = (t: { webhooks: string }) => ({
  webhooks: `SELECT ${WEBHOOK_COLUMNS}, ${WEBHOOK_VERSION} AS version FROM ${t.webhooks}
      WHERE (tenant_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
});
