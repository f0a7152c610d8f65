import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { SuiteContext } from './store-harness.js';
import { keysOn } from './support/keys-on.js';
import { medianTimeRatio } from './support/median-ratio.js';

export function timingCases(ctx: SuiteContext): void {
  describe('verification timing (docs/http-api.md §5.3)', () => {
    it('an unknown key id costs what a wrong secret costs, within noise', async () => {
      const keys = keysOn(ctx.store);
      for (let i = 0; i < 50; i++)
        await keys.create('tenant_a', { name: `filler ${i}`, scopes: ['items:read'] });
      const { secret } = await keys.create('tenant_a', { name: 'timed', scopes: ['items:read'] });
      const wrongSecret = `${secret.slice(0, 25)}${randomBytes(24).toString('hex')}`;
      const unknownId = `sk_live_${randomBytes(8).toString('hex')}_${randomBytes(24).toString('hex')}`;
      // Size each sample to ~20 ms, whatever one verification costs on this store.
      const start = process.hrtime.bigint();
      for (let i = 0; i < 20; i++) await keys.verify(wrongSecret).catch(() => {});
      const single = Number(process.hrtime.bigint() - start) / 20;
      const perRound = Math.max(20, Math.min(400, Math.round(20_000_000 / single)));
      const ratio = await medianTimeRatio((k) => keys.verify(k), unknownId, wrongSecret, { perRound });
      console.log(
        `unknown-id / wrong-secret verification time: ${ratio.toFixed(3)} (${perRound} per sample)`,
      );
      expect(ratio).toBeGreaterThan(0.85);
      expect(ratio).toBeLessThan(1.15);
    });
  });
}
