import { describe, expect, it } from 'vitest';
import { idempotencyRecord, sha256, T0, webhookRecord } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';

const at = (ms: number) => new Date(T0.getTime() + ms);

export function idempotencyCases(ctx: SuiteContext): void {
  describe('idempotency keys', () => {
    it('holdsSealedValues: a webhook or a completed answer, in any tenant; not a claim in progress', async () => {
      expect(await ctx.store.holdsSealedValues()).toBe(false);
      const claim = idempotencyRecord({ tenantId: 'tenant_b' });
      expect(await ctx.store.claimIdempotencyKey(claim, T0)).toEqual({ outcome: 'claimed' });
      expect(await ctx.store.holdsSealedValues()).toBe(false);
      expect(await ctx.store.completeIdempotencyKey({ ...claim, responseSealed: 'sealed:answer' })).toBe(
        true,
      );
      expect(await ctx.store.holdsSealedValues()).toBe(true);
      expect(await ctx.store.purgeIdempotencyKeys(new Date(claim.expiresAt.getTime() + 1))).toBe(1);
      expect(await ctx.store.holdsSealedValues()).toBe(false);
      const webhook = webhookRecord({ tenantId: 'tenant_c' });
      await ctx.store.insertWebhook(webhook);
      expect(await ctx.store.holdsSealedValues()).toBe(true);
      expect(await ctx.store.deleteWebhook(webhook.tenantId, webhook.id)).toBe(true);
      expect(await ctx.store.holdsSealedValues()).toBe(false);
    });

    it('the first claim wins; a second sees the record in progress', async () => {
      const first = idempotencyRecord();
      expect(await ctx.store.claimIdempotencyKey(first, T0)).toEqual({ outcome: 'claimed' });
      const second = idempotencyRecord({ key: first.key, fingerprint: sha256('other') });
      expect(await ctx.store.claimIdempotencyKey(second, at(1))).toEqual({
        outcome: 'exists',
        record: first,
      });
    });

    it('of 100 concurrent claims of one key, over two connections, exactly one wins', async () => {
      const key = 'the-same-key';
      const peer = await ctx.peer();
      const outcomes = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          (i % 2 ? peer : ctx.store).claimIdempotencyKey(idempotencyRecord({ key }), T0),
        ),
      );
      const claimed = outcomes.filter((o) => o.outcome === 'claimed');
      expect(claimed).toHaveLength(1);
      const holders = new Set(outcomes.flatMap((o) => (o.outcome === 'exists' ? [o.record.claimId] : [])));
      expect(holders.size).toBe(1);
    });

    it('keys are per tenant: the same key in another tenant is its own record', async () => {
      const a = idempotencyRecord();
      const b = idempotencyRecord({ tenantId: 'tenant_b', key: a.key });
      expect(await ctx.store.claimIdempotencyKey(a, T0)).toEqual({ outcome: 'claimed' });
      expect(await ctx.store.claimIdempotencyKey(b, T0)).toEqual({ outcome: 'claimed' });
      expect(
        await ctx.store.completeIdempotencyKey({ ...b, tenantId: 'tenant_a', responseSealed: 'sealed:b' }),
      ).toBe(false); // b's claim id does not hold tenant_a's record
    });

    it('completes only under the holding claim, and a completed record is returned as it is', async () => {
      const record = idempotencyRecord();
      await ctx.store.claimIdempotencyKey(record, T0);
      const completion = {
        tenantId: 'tenant_a',
        key: record.key,
        claimId: record.claimId,
        responseSealed: 'sealed:r',
      };
      expect(await ctx.store.completeIdempotencyKey({ ...completion, claimId: 'not-the-holder' })).toBe(
        false,
      );
      expect(await ctx.store.completeIdempotencyKey(completion)).toBe(true);
      expect(await ctx.store.completeIdempotencyKey(completion)).toBe(false); // no longer in progress
      const again = await ctx.store.claimIdempotencyKey(idempotencyRecord({ key: record.key }), at(120_000));
      expect(again).toEqual({
        outcome: 'exists',
        record: { ...record, state: 'completed', responseSealed: 'sealed:r' },
      });
    });

    it('a claim whose request died is taken over after lockedUntil; the old holder can no longer complete', async () => {
      const dead = idempotencyRecord();
      await ctx.store.claimIdempotencyKey(dead, T0);
      const early = idempotencyRecord({ key: dead.key });
      expect((await ctx.store.claimIdempotencyKey(early, at(59_999))).outcome).toBe('exists');
      const late = idempotencyRecord({ key: dead.key, createdAt: at(60_000), lockedUntil: at(120_000) });
      expect(await ctx.store.claimIdempotencyKey(late, at(60_000))).toEqual({ outcome: 'claimed' });
      const stale = {
        tenantId: 'tenant_a',
        key: dead.key,
        claimId: dead.claimId,
        responseSealed: 'sealed:old',
      };
      expect(await ctx.store.completeIdempotencyKey(stale)).toBe(false);
      await ctx.store.releaseIdempotencyKey('tenant_a', dead.key, dead.claimId); // not the holder: no effect
      expect(await ctx.store.claimIdempotencyKey(idempotencyRecord({ key: dead.key }), at(60_001))).toEqual({
        outcome: 'exists',
        record: late,
      });
    });

    it('release frees the key for the next claim, only for the holder', async () => {
      const record = idempotencyRecord();
      await ctx.store.claimIdempotencyKey(record, T0);
      await ctx.store.releaseIdempotencyKey('tenant_a', record.key, 'someone-else');
      expect(
        (await ctx.store.claimIdempotencyKey(idempotencyRecord({ key: record.key }), at(1))).outcome,
      ).toBe('exists');
      await ctx.store.releaseIdempotencyKey('tenant_b', record.key, record.claimId);
      await ctx.store.releaseIdempotencyKey('tenant_a', record.key, record.claimId);
      expect(await ctx.store.claimIdempotencyKey(idempotencyRecord({ key: record.key }), at(2))).toEqual({
        outcome: 'claimed',
      });
    });

    it('an expired record counts as absent, and purge deletes exactly the expired ones', async () => {
      const old = idempotencyRecord({ expiresAt: at(1_000) });
      const fresh = idempotencyRecord({ expiresAt: at(5_000) });
      const otherTenant = idempotencyRecord({ tenantId: 'tenant_b', expiresAt: at(1_000) });
      for (const r of [old, fresh, otherTenant]) await ctx.store.claimIdempotencyKey(r, T0);
      await ctx.store.completeIdempotencyKey({ ...old, responseSealed: 'sealed:old' });
      expect(await ctx.store.purgeIdempotencyKeys(at(999))).toBe(0);
      expect(await ctx.store.purgeIdempotencyKeys(at(1_000))).toBe(2);
      expect(
        (await ctx.store.claimIdempotencyKey(idempotencyRecord({ key: fresh.key }), at(1_000))).outcome,
      ).toBe('exists');
      // Expired but not yet purged: a claim takes its place.
      const lingering = idempotencyRecord({ expiresAt: at(2_000) });
      await ctx.store.claimIdempotencyKey(lingering, T0);
      await ctx.store.completeIdempotencyKey({ ...lingering, responseSealed: 'sealed:l' });
      const reuse = idempotencyRecord({ key: lingering.key, expiresAt: at(90_000) });
      expect(await ctx.store.claimIdempotencyKey(reuse, at(2_000))).toEqual({ outcome: 'claimed' });
    });

    it('an insert whose claim lost the key writes nothing: not the webhook, not the completion', async () => {
      const dead = idempotencyRecord();
      await ctx.store.claimIdempotencyKey(dead, T0);
      const takeover = idempotencyRecord({ key: dead.key, lockedUntil: at(120_000) });
      expect(await ctx.store.claimIdempotencyKey(takeover, at(60_000))).toEqual({ outcome: 'claimed' });
      const webhook = webhookRecord();
      const stale = {
        tenantId: 'tenant_a',
        key: dead.key,
        claimId: dead.claimId,
        responseSealed: 'sealed:late',
      };
      expect(await ctx.store.insertWebhook(webhook, stale)).toBe('claim_lost');
      expect(await ctx.store.getWebhook('tenant_a', webhook.id)).toBeNull();
      expect(await ctx.store.claimIdempotencyKey(idempotencyRecord({ key: dead.key }), at(60_001))).toEqual({
        outcome: 'exists',
        record: takeover,
      });
      // A released claim has lost the key too.
      const released = idempotencyRecord();
      await ctx.store.claimIdempotencyKey(released, T0);
      await ctx.store.releaseIdempotencyKey('tenant_a', released.key, released.claimId);
      const completion = {
        tenantId: 'tenant_a',
        key: released.key,
        claimId: released.claimId,
        responseSealed: 'x',
      };
      expect(await ctx.store.insertWebhook(webhookRecord(), completion)).toBe('claim_lost');
    });

    it('an insert with a completion writes the webhook and completes the key in one transaction', async () => {
      const claim = idempotencyRecord();
      await ctx.store.claimIdempotencyKey(claim, T0);
      const webhook = webhookRecord();
      const completion = {
        tenantId: 'tenant_a',
        key: claim.key,
        claimId: claim.claimId,
        responseSealed: 'sealed:201',
      };
      expect(await ctx.store.insertWebhook(webhook, completion)).toBe('inserted');
      const after = await ctx.store.claimIdempotencyKey(idempotencyRecord({ key: claim.key }), at(1));
      expect(after).toEqual({
        outcome: 'exists',
        record: { ...claim, state: 'completed', responseSealed: 'sealed:201' },
      });

      // An active twin: neither the webhook nor the completion is written.
      const claim2 = idempotencyRecord();
      await ctx.store.claimIdempotencyKey(claim2, T0);
      const twin = webhookRecord({ url: webhook.url, events: webhook.events });
      const completion2 = {
        tenantId: 'tenant_a',
        key: claim2.key,
        claimId: claim2.claimId,
        responseSealed: 'sealed:x',
      };
      expect(await ctx.store.insertWebhook(twin, completion2)).toBe('active_twin');
      expect(await ctx.store.getWebhook('tenant_a', twin.id)).toBeNull();
      const still = await ctx.store.claimIdempotencyKey(idempotencyRecord({ key: claim2.key }), at(1));
      expect(still).toEqual({ outcome: 'exists', record: claim2 });
    });
  });
}
