import { describe, expect, it } from 'vitest';
import { keyRecord } from './fixtures.js';
import { isUnavailable } from './key-cases.js';
import type { StoreHarness, SuiteContext } from './store-harness.js';

export function lifecycleCases(ctx: SuiteContext, harness: StoreHarness): void {
  describe('lifecycle', () => {
    it('answers ping while open', async () => {
      await expect(ctx.store.ping()).resolves.toBeUndefined();
    });

    it('throws KeyhookError("unavailable") once the database is gone, for reads and writes alike', async () => {
      const store = await harness.create();
      await store.close();
      const attempts = [
        store.ping(),
        store.findApiKeyByCredential('sk_live_0000000000000000', '00'),
        store.insertApiKey(keyRecord()),
        store.revokeApiKey('tenant_a', 'key_00000000000000000000000000', new Date()),
      ];
      for (const attempt of attempts) {
        const error = await attempt.then(
          () => null,
          (e: unknown) => e,
        );
        expect(isUnavailable(error), String(error)).toBe(true);
      }
    });
  });
}
