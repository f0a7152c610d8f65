import type {
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
} from '@keyhook/core/store';
import { claimsTwinKey, DELIVERY_RULES, holdsDeliveries } from '@keyhook/core/store';
import {
  isActiveTwinViolation,
  notifyDeliveries,
  sharedStatements,
  transition,
} from '../shared-statements.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';
import { RACE_ATTEMPTS, unavailable } from '../unavailable.js';
import { oneWebhook, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';
import { getWebhook } from './get-webhook.js';

const { hold } = DELIVERY_RULES;

const statements = (t: Tables) => ({
  // Writes only a real change. $6 and $7 are core's rules for the new status (claimsTwinKey,
  // holdsDeliveries): the twin claim it makes, and whether it holds. Enabling beside an active twin fails
  // on the twin-claim index, and a concurrent enable of the other twin makes this wait for its commit and
  // then fail the same way. A status that does not hold starts the consecutive-failure count again. The
  // store runs it first in its transaction: its row lock is what publishEvent's FOR SHARE and a
  // completion's lock order against.
  setStatus: `UPDATE ${t.webhooks} SET status = $3, disabled_reason = $4, updated_at = $5,
        disabled_at = CASE WHEN $4::text IS NULL THEN NULL ELSE $5::timestamptz END,
        twin_claim = CASE WHEN $6::boolean THEN twin_key END,
        consecutive_failures = CASE WHEN $7::boolean THEN consecutive_failures ELSE 0 END
      WHERE tenant_id = $1 AND id = $2 AND status <> $3
      RETURNING ${WEBHOOK_COLUMNS}`,

  // The held deliveries of an endpoint that no longer holds them, pending and due at $2: the
  // counterpart of the shared `hold`, with the same $3.
  release: transition(
    t,
    `webhook_id = $1 AND status = $3`,
    `status = 'pending', due_at = $2, held_since = NULL, updated_at = $2`,
  ),
});

export async function setWebhookStatus(
  ctx: StoreContext,
  tenantId: string,
  id: string,
  status: WebhookStatus,
  disabledReason: WebhookDisabledReason | null,
  at: Date,
): Promise<WebhookStatusOutcome> {
  const sql = ctx.sql(statements);
  const shared = ctx.sql(sharedStatements);
  for (let attempt = 0; ; attempt++) {
    let updated: WebhookRecord | null;
    try {
      updated = await ctx.transaction(async (client) => {
        // The webhook row first: its lock orders this against publishEvent's FOR SHARE (operations/publish-event.ts).
        const webhook = oneWebhook(
          await ctx.run<WebhookRow>(client, sql.setStatus, [
            tenantId,
            id,
            status,
            disabledReason,
            at,
            claimsTwinKey(status),
            holdsDeliveries(status),
          ]),
        );
        if (!webhook) return null;
        await ctx.allowBulk(client);
        if (holdsDeliveries(status)) {
          await ctx.run(client, shared.hold, [id, at, hold.state], true);
        } else {
          await ctx.run(client, sql.release, [id, at, hold.state], true);
          // The slots given to the held deliveries were given up (docs/decisions.md §8.18).
          await ctx.run(client, shared.resetRate, [id, at], true);
          // Released deliveries are due now, and so is an expired lease the disable kept from leasing.
          await notifyDeliveries(ctx, client);
        }
        return webhook;
      });
    } catch (error) {
      if (isActiveTwinViolation(error)) return { outcome: 'active_twin' };
      throw error;
    }
    if (updated) return { outcome: 'updated', webhook: updated };
    // Nothing written: the webhook is missing or already has this status. A new statement reports which.
    const current = await getWebhook(ctx, tenantId, id);
    if (!current) return { outcome: 'not_found' };
    // Changed again between the two statements: decide anew rather than report a status not asked for.
    if (current.status === status) return { outcome: 'updated', webhook: current };
    if (attempt + 1 >= RACE_ATTEMPTS)
      throw unavailable('The webhook changed status too often to be set; retry.');
  }
}
