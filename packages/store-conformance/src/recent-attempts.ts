import { randomBytes } from 'node:crypto';
import { newId } from '@keyhook/core/http';
import { type AttemptCompletion, DELIVERY_RULES, type WebhookRecord } from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { eventRecord, FAILED, SUCCEEDED, type Verdict } from './delivery-cases.js';
import { T0, webhookRecord } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';

const at = (ms: number) => new Date(T0.getTime() + ms);

/** Core's rule with a threshold no case reaches: the failures here never disable an endpoint. */
const NEVER_DISABLE = { ...DELIVERY_RULES.autoDisable, after: 1000 };

/** Store.countRecentAttempts: per webhook of a tenant, the attempts started in a window that got a 2xx, and the rest. */
export function recentAttemptCases(ctx: SuiteContext): void {
  /** A webhook subscribed to an event type of its own, so each publish reaches it alone. */
  async function subscribed(tenantId = 'tenant_a'): Promise<WebhookRecord> {
    const webhook = webhookRecord({ tenantId, events: [`only.${randomBytes(4).toString('hex')}`] });
    expect(await ctx.store.insertWebhook(webhook)).toBe('inserted');
    return webhook;
  }

  /**
   * Records attempts of one new delivery to `webhook` through the delivery path: published at
   * the first attempt's time, then for each `[ms, statusCode]` leased and completed at T0 + ms,
   * retried after every attempt but the last.
   */
  async function attempts(webhook: WebhookRecord, ...tries: [number, number | null][]): Promise<void> {
    const published = await ctx.store.publishEvent(
      eventRecord({ tenantId: webhook.tenantId, type: webhook.events[0]!, createdAt: at(tries[0]![0]) }),
      () => newId('dlv'),
    );
    if (published.outcome !== 'published' || published.deliveries.length !== 1)
      throw new Error('expected one delivery');
    for (const [k, [ms, statusCode]] of tries.entries()) {
      const leased = await ctx.store.leaseDeliveries({
        now: at(ms),
        limit: 10,
        leaseMs: 30_000,
        leaseId: randomBytes(8).toString('hex'),
      });
      // Every earlier delivery was completed: only this one is due.
      if (leased.length !== 1) throw new Error(`expected one due delivery, got ${leased.length}`);
      const { delivery } = leased[0]!;
      const ok = statusCode !== null && statusCode >= 200 && statusCode < 300;
      const next = tries[k + 1];
      const verdict: Verdict = next
        ? { status: 'retry_scheduled', dueAt: at(next[0]), endpointFailures: 'unchanged' }
        : ok
          ? SUCCEEDED
          : FAILED;
      const completion: AttemptCompletion = {
        tenantId: delivery.tenantId,
        deliveryId: delivery.id,
        leaseId: delivery.leaseId!,
        attempt: {
          deliveryId: delivery.id,
          tenantId: delivery.tenantId,
          attempt: delivery.attempts + 1,
          startedAt: at(ms),
          durationMs: 12,
          statusCode,
          error: ok ? null : statusCode === null ? 'connect ECONNREFUSED 127.0.0.1:9' : `HTTP ${statusCode}`,
          responseBody: null,
        },
        ...verdict,
        autoDisable: NEVER_DISABLE,
        at: at(ms),
      };
      const outcome = await ctx.store.completeAttempt(completion);
      if (outcome.outcome !== 'recorded') throw new Error('expected the attempt to be recorded');
    }
  }

  describe('recent attempt counts', () => {
    it("counts per webhook the tenant's attempts started at or after `since`: 2xx succeeded, any other status or none failed", async () => {
      const since = at(100_000);
      const first = await subscribed();
      const second = await subscribed();
      const quiet = await subscribed();
      const theirs = await subscribed('tenant_b');

      // Before the window: not counted, whatever they got.
      await attempts(first, [10_000, 200]);
      await attempts(quiet, [99_999, 500]);
      // A retry that straddles the window: only the attempt inside it counts.
      await attempts(first, [99_000, 503], [since.getTime() - T0.getTime(), 204]);
      await attempts(first, [110_000, 299]);
      await attempts(first, [111_000, 300], [112_000, null]);
      await attempts(second, [120_000, 199]);
      await attempts(second, [121_000, 404], [122_000, 200]);
      await attempts(theirs, [130_000, 500], [131_000, 201]);

      const expected = [
        { webhookId: first.id, succeeded: 2, failed: 2 },
        { webhookId: second.id, succeeded: 1, failed: 2 },
      ].sort((a, b) => (a.webhookId < b.webhookId ? -1 : 1));
      expect(await ctx.store.countRecentAttempts('tenant_a', since)).toEqual(expected);
      expect(await ctx.store.countRecentAttempts('tenant_b', since)).toEqual([
        { webhookId: theirs.id, succeeded: 1, failed: 1 },
      ]);
      // The window starts where it is told: from T0 every attempt of the tenant counts.
      expect(await ctx.store.countRecentAttempts('tenant_a', T0)).toEqual(
        [
          { webhookId: first.id, succeeded: 3, failed: 3 },
          { webhookId: second.id, succeeded: 1, failed: 2 },
          { webhookId: quiet.id, succeeded: 0, failed: 1 },
        ].sort((a, b) => (a.webhookId < b.webhookId ? -1 : 1)),
      );
      expect(await ctx.store.countRecentAttempts('tenant_a', at(200_000))).toEqual([]);
      expect(await ctx.store.countRecentAttempts('tenant_c', T0)).toEqual([]);
    });
  });
}
