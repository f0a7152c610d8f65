import { createHmac } from 'node:crypto';
import { createKeyhook, generateEncryptionKey, silentLogger } from '@keyhook/core';
import { describe, expect, it } from 'vitest';
import type { StoreHarness, SuiteContext } from './store-harness.js';
import { TEST_CATALOG } from './support/catalog.js';
import { TEST_ADMIN_SECRET } from './support/credentials.js';
import { TestReceiver } from './support/receiver.js';

const base = {
  ...TEST_CATALOG,
  adminSession: { secret: TEST_ADMIN_SECRET },
  logger: silentLogger,
  mode: 'development',
  // What is tested is sealing across a restart: no feed, so a store without one runs it too.
  eventsFeed: false,
} as const;

/**
 * No restart trap: a secret sealed by one process must open in the next. A persistent store
 * refuses to start without a kept encryptionKey; with one, a webhook created before a restart
 * still gets signed deliveries after it.
 */
export function restartCases(ctx: SuiteContext, harness: StoreHarness): void {
  describe('restart', () => {
    it('a persistent store refuses a keyhook without encryptionKey, naming generateEncryptionKey()', () => {
      if (!ctx.store.persistent) {
        // Memory: nothing outlives the process, so a key for this process only is enough.
        expect(() => createKeyhook({ ...base, store: ctx.store })).not.toThrow();
        return;
      }
      expect(() => createKeyhook({ ...base, store: ctx.store })).toThrow(
        /encryptionKey is required with a persistent store[\s\S]*generateEncryptionKey\(\)/,
      );
    });

    it(`a webhook created before a restart is delivered after it, signed with its secret (${harness.name})`, async () => {
      const receiver = await TestReceiver.start();
      const encryptionKey = generateEncryptionKey();
      try {
        const before = createKeyhook({ ...base, store: ctx.store, encryptionKey });
        const { secret } = await before.webhooks.create('tenant_a', {
          url: receiver.url('/hook'),
          events: ['run.completed'],
        });
        await before.close();
        // The next process: its own connection, its own keyhook, the same kept key.
        const after = createKeyhook({ ...base, store: await ctx.peer(), encryptionKey });
        const worker = after.createWorker({ pollIntervalMs: 20 });
        worker.start();
        try {
          const published = await after.events.publish({
            tenantId: 'tenant_a',
            type: 'run.completed',
            data: {},
          });
          await receiver.waitFor((requests) => requests.length === 1);
          const [request] = receiver.requests;
          const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(
            String(request!.headers[after.headerNames.signature]),
          );
          expect(match).not.toBeNull();
          const expected = createHmac('sha256', secret)
            .update(`${match![1]}.`)
            .update(request!.body)
            .digest('hex');
          expect(match![2]).toBe(expected);
          expect(request!.headers[after.headerNames.eventId]).toBe(published.event.id);
        } finally {
          await after.close();
        }
      } finally {
        await receiver.close();
      }
    });
  });
}
