import { createKeyhook, generateEncryptionKey, type Keyhook, silentLogger } from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import type { SuiteContext } from './store-harness.js';
import { TEST_CATALOG } from './support/catalog.js';
import { FakeClock } from './support/clock.js';
import { TEST_ADMIN_SECRET } from './support/credentials.js';
import { TestReceiver } from './support/receiver.js';

/**
 * A rotation's overlap on two app instances sharing one database: each signs with both secrets
 * inside the window and with the new one alone from its end, at the same moment on both, with
 * nothing run to end it. Each instance's worker delivers in turn.
 */
export function rotationOverlapCases(ctx: SuiteContext): void {
  describe('signing-secret rotation with an overlap, across instances', () => {
    it('both instances sign with both secrets inside the window, and with the new one alone from its end', async () => {
      const receiver = await TestReceiver.start();
      // Near the real time, as a receiver would judge `t`.
      const clock = new FakeClock(new Date());
      const encryptionKey = generateEncryptionKey();
      const instance = (store: Store) =>
        createKeyhook({
          ...TEST_CATALOG,
          store,
          adminSession: { secret: TEST_ADMIN_SECRET },
          logger: silentLogger,
          mode: 'development',
          clock,
          encryptionKey,
          eventsFeed: false,
        });
      const a = instance(ctx.store);
      const b = instance(await ctx.peer());
      try {
        const { webhook } = await a.webhooks.create('tenant_a', {
          url: receiver.url('/hook'),
          events: ['run.completed'],
        });
        await a.webhooks.rotate('tenant_a', webhook.id, { overlapSeconds: 30 });
        /** How many `v1=` the delivery that `sender`'s worker sends carries. */
        const signatures = async (sender: Keyhook) => {
          const seen = receiver.requests.length;
          const worker = sender.createWorker({ pollIntervalMs: 10 });
          worker.start();
          try {
            await sender.events.publish({ tenantId: 'tenant_a', type: 'run.completed', data: {} });
            await receiver.waitFor((requests) => requests.length === seen + 1);
          } finally {
            await worker.stop();
          }
          return (
            String(receiver.requests[seen]!.headers[sender.headerNames.signature]).split(',v1=').length - 1
          );
        };
        clock.advance(29_999);
        expect([await signatures(a), await signatures(b)]).toEqual([2, 2]);
        clock.advance(1);
        expect([await signatures(a), await signatures(b)]).toEqual([1, 1]);
      } finally {
        await a.close();
        await b.close();
        await receiver.close();
      }
    });
  });
}
