import { newId } from '@keyhook/core/http';
import { describe, expect, it } from 'vitest';
import { eventRecord } from './delivery-cases.js';
import { orderedIds, subscriptionOf, T0, webhookRecord } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';

const LATER = new Date('2026-02-01T00:00:00.000Z');
/** Rotation times and overlap ends with milliseconds, so a store that rounds them is caught. */
const ROTATED = new Date('2026-02-03T04:05:06.789Z');
const OVERLAP_END = new Date('2026-02-04T04:05:06.789Z');
const ROTATED_AGAIN = new Date('2026-02-05T10:20:30.041Z');
const OVERLAP_END_AGAIN = new Date('2026-02-06T10:20:30.999Z');
const deliveryId = () => newId('dlv');

export function webhookCases(ctx: SuiteContext): void {
  describe('webhooks', () => {
    it('stores a webhook and reads back every field', async () => {
      const record = webhookRecord({ events: ['apply.failed', 'run.completed'] });
      expect(await ctx.store.insertWebhook(record)).toBe('inserted');
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual(record);
    });

    it('never shows one tenant another tenant’s webhook, for any method', async () => {
      const record = webhookRecord();
      await ctx.store.insertWebhook(record);
      expect(await ctx.store.getWebhook('tenant_b', record.id)).toBeNull();
      expect(await ctx.store.listWebhooks('tenant_b', { limit: 10 })).toEqual([]);
      expect(await ctx.store.setWebhookStatus('tenant_b', record.id, 'disabled', 'manual', LATER)).toEqual({
        outcome: 'not_found',
      });
      expect(
        await ctx.store.rotateWebhookSecret('tenant_b', record.id, 'sealed:other', null, LATER, null),
      ).toBeNull();
      expect(await ctx.store.deleteWebhook('tenant_b', record.id)).toBe(false);
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual(record);
    });

    it('lists newest first, pages with `before`, and only the tenant’s own', async () => {
      const records = [];
      for (const id of orderedIds('wh', 5)) {
        const record = webhookRecord({ id });
        records.push(record);
        await ctx.store.insertWebhook(record);
      }
      await ctx.store.insertWebhook(webhookRecord({ tenantId: 'tenant_b' }));
      const ids = records.map((r) => r.id).reverse();
      const first = await ctx.store.listWebhooks('tenant_a', { limit: 3 });
      expect(first.map((w) => w.id)).toEqual(ids.slice(0, 3));
      const second = await ctx.store.listWebhooks('tenant_a', { limit: 3, before: first.at(-1)!.id });
      expect(second.map((w) => w.id)).toEqual(ids.slice(3));
    });

    it('refuses a second active twin in the same tenant (docs/http-api.md §4.3 rule 5), but not in another tenant', async () => {
      const first = webhookRecord();
      expect(await ctx.store.insertWebhook(first)).toBe('inserted');
      const twin = webhookRecord({ url: first.url, events: first.events });
      expect(await ctx.store.insertWebhook(twin)).toBe('active_twin');
      expect(await ctx.store.getWebhook('tenant_a', twin.id)).toBeNull();
      const otherTenant = webhookRecord({ tenantId: 'tenant_b', url: first.url, events: first.events });
      expect(await ctx.store.insertWebhook(otherTenant)).toBe('inserted');
      // Same URL, another event set: a different twin key, allowed.
      expect(await ctx.store.insertWebhook(webhookRecord({ url: first.url, events: ['run.failed'] }))).toBe(
        'inserted',
      );
      // A disabled twin may be inserted beside the active one.
      const disabled = webhookRecord({ url: first.url, events: first.events, status: 'disabled' });
      expect(await ctx.store.insertWebhook({ ...disabled, disabledReason: 'manual' })).toBe('inserted');
    });

    it('of 50 concurrent inserts of active twins, exactly one is inserted', async () => {
      const template = webhookRecord();
      const peer = await ctx.peer();
      const outcomes = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (i % 2 ? peer : ctx.store).insertWebhook(
            webhookRecord({ url: template.url, events: template.events }),
          ),
        ),
      );
      expect(outcomes.filter((o) => o === 'inserted')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'active_twin')).toHaveLength(49);
      expect(await ctx.store.listWebhooks('tenant_a', { limit: 100 })).toHaveLength(1);
    });

    it('disables and re-enables; re-enabling beside an active twin is refused and writes nothing', async () => {
      const first = webhookRecord();
      await ctx.store.insertWebhook(first);
      const disabled = await ctx.store.setWebhookStatus('tenant_a', first.id, 'disabled', 'manual', LATER);
      expect(disabled).toEqual({
        outcome: 'updated',
        webhook: {
          ...first,
          status: 'disabled',
          disabledReason: 'manual',
          disabledAt: LATER,
          updatedAt: LATER,
        },
      });
      // After disabling, the same url and event set may be registered again (docs/http-api.md §3).
      const second = webhookRecord({ url: first.url, events: first.events });
      expect(await ctx.store.insertWebhook(second)).toBe('inserted');
      expect(await ctx.store.setWebhookStatus('tenant_a', first.id, 'active', null, LATER)).toEqual({
        outcome: 'active_twin',
      });
      expect((await ctx.store.getWebhook('tenant_a', first.id))?.status).toBe('disabled');
      // Once the twin is gone, re-enabling works and clears the reason.
      expect(await ctx.store.deleteWebhook('tenant_a', second.id)).toBe(true);
      const enabled = await ctx.store.setWebhookStatus('tenant_a', first.id, 'active', null, LATER);
      expect(enabled.outcome === 'updated' && enabled.webhook.status).toBe('active');
      expect(enabled.outcome === 'updated' && enabled.webhook.disabledReason).toBeNull();
      expect(enabled.outcome === 'updated' && enabled.webhook.disabledAt).toBeNull();
    });

    it('of concurrent re-enables of two disabled twins, exactly one wins', async () => {
      const a = webhookRecord({ status: 'disabled', disabledReason: 'manual' });
      const b = webhookRecord({ url: a.url, events: a.events, status: 'disabled', disabledReason: 'manual' });
      await ctx.store.insertWebhook(a);
      await ctx.store.insertWebhook(b);
      const peer = await ctx.peer();
      const outcomes = await Promise.all([
        ctx.store.setWebhookStatus('tenant_a', a.id, 'active', null, LATER),
        peer.setWebhookStatus('tenant_a', b.id, 'active', null, LATER),
      ]);
      expect(outcomes.map((o) => o.outcome).sort()).toEqual(['active_twin', 'updated']);
    });

    it('setting the status a webhook already has changes nothing', async () => {
      const record = webhookRecord({ status: 'disabled', disabledReason: 'failures' });
      await ctx.store.insertWebhook(record);
      expect(await ctx.store.setWebhookStatus('tenant_a', record.id, 'disabled', 'manual', LATER)).toEqual({
        outcome: 'updated',
        webhook: record,
      });
    });

    it('stores the signature scheme, changes it with a subscription, and keeps it when the change names none', async () => {
      const record = webhookRecord({ signatureScheme: 'standard-webhooks' });
      await ctx.store.insertWebhook(record);
      expect((await ctx.store.getWebhook('tenant_a', record.id))!.signatureScheme).toBe('standard-webhooks');
      // A change of url alone leaves the scheme as stored.
      const moved = subscriptionOf('https://hooks.example.com/scheme-moved', record.events, record);
      const first = await ctx.store.updateWebhookSubscription('tenant_a', record.id, moved, LATER);
      expect(first).toEqual({
        outcome: 'updated',
        webhook: { ...record, url: moved.url, twinKey: moved.twinKey, updatedAt: LATER },
      });
      const movedRecord = { ...record, url: moved.url, twinKey: moved.twinKey, updatedAt: LATER };
      const back = {
        ...subscriptionOf(moved.url, record.events, movedRecord),
        signatureScheme: 'keyhook' as const,
      };
      expect(await ctx.store.updateWebhookSubscription('tenant_a', record.id, back, ROTATED)).toEqual({
        outcome: 'updated',
        webhook: { ...movedRecord, signatureScheme: 'keyhook', updatedAt: ROTATED },
      });
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual({
        ...movedRecord,
        signatureScheme: 'keyhook',
        updatedAt: ROTATED,
      });
      // Another tenant cannot change it.
      const foreign = {
        ...subscriptionOf(moved.url, record.events, movedRecord),
        signatureScheme: 'standard-webhooks' as const,
      };
      expect(await ctx.store.updateWebhookSubscription('tenant_b', record.id, foreign, LATER)).toEqual({
        outcome: 'not_found',
      });
      expect(
        (await ctx.store.listWebhooks('tenant_a', { limit: 10 })).find((w) => w.id === record.id),
      ).toEqual({
        ...movedRecord,
        signatureScheme: 'keyhook',
        updatedAt: ROTATED,
      });
    });

    it('changes url and events with their twin key, only from the subscription it was computed from', async () => {
      const record = webhookRecord();
      await ctx.store.insertWebhook(record);
      const next = subscriptionOf(
        'https://hooks.example.com/moved',
        ['apply.failed', 'run.completed'],
        record,
      );
      expect(await ctx.store.updateWebhookSubscription('tenant_a', record.id, next, LATER)).toEqual({
        outcome: 'updated',
        webhook: { ...record, url: next.url, events: next.events, twinKey: next.twinKey, updatedAt: LATER },
      });
      // `from` is the old twin key: another change happened since, so nothing is written.
      const stale = subscriptionOf('https://hooks.example.com/again', ['run.failed'], record);
      expect(await ctx.store.updateWebhookSubscription('tenant_a', record.id, stale, LATER)).toEqual({
        outcome: 'stale',
      });
      expect((await ctx.store.getWebhook('tenant_a', record.id))!.url).toBe(next.url);
      expect(await ctx.store.updateWebhookSubscription('tenant_b', record.id, next, LATER)).toEqual({
        outcome: 'not_found',
      });
    });

    it('an active webhook cannot move onto an active twin’s key; a disabled one can', async () => {
      const first = webhookRecord();
      const moving = webhookRecord();
      const resting = webhookRecord({ status: 'disabled', disabledReason: 'manual' });
      for (const record of [first, moving, resting]) await ctx.store.insertWebhook(record);
      const ontoFirst = (from: typeof moving) => subscriptionOf(first.url, first.events, from);
      expect(
        await ctx.store.updateWebhookSubscription('tenant_a', moving.id, ontoFirst(moving), LATER),
      ).toEqual({
        outcome: 'active_twin',
      });
      expect(await ctx.store.getWebhook('tenant_a', moving.id)).toEqual(moving);
      const moved = await ctx.store.updateWebhookSubscription(
        'tenant_a',
        resting.id,
        ontoFirst(resting),
        LATER,
      );
      expect(moved).toMatchObject({
        outcome: 'updated',
        webhook: { twinKey: first.twinKey, status: 'disabled' },
      });
    });

    it('the twin claim follows the webhook: a moved active one takes it along, a moved disabled one claims nothing', async () => {
      const first = webhookRecord();
      const moving = webhookRecord();
      const resting = webhookRecord({ status: 'disabled', disabledReason: 'manual' });
      for (const record of [first, moving, resting]) await ctx.store.insertWebhook(record);
      const away = subscriptionOf('https://hooks.example.com/away', ['run.completed'], moving);
      expect((await ctx.store.updateWebhookSubscription('tenant_a', moving.id, away, LATER)).outcome).toBe(
        'updated',
      );
      // Its old key is free, its new one is claimed.
      expect(await ctx.store.insertWebhook(webhookRecord({ url: moving.url, events: moving.events }))).toBe(
        'inserted',
      );
      expect(await ctx.store.insertWebhook(webhookRecord({ url: away.url, events: away.events }))).toBe(
        'active_twin',
      );
      // Disabled, resting moves onto first's key without claiming it, and cannot be enabled there.
      const ontoFirst = subscriptionOf(first.url, first.events, resting);
      expect(
        (await ctx.store.updateWebhookSubscription('tenant_a', resting.id, ontoFirst, LATER)).outcome,
      ).toBe('updated');
      expect(await ctx.store.setWebhookStatus('tenant_a', resting.id, 'active', null, LATER)).toEqual({
        outcome: 'active_twin',
      });
      // Disabling first gives its claim up; then resting may be enabled, and claims the key itself.
      await ctx.store.setWebhookStatus('tenant_a', first.id, 'disabled', 'manual', LATER);
      expect((await ctx.store.setWebhookStatus('tenant_a', resting.id, 'active', null, LATER)).outcome).toBe(
        'updated',
      );
      expect(await ctx.store.setWebhookStatus('tenant_a', first.id, 'active', null, LATER)).toEqual({
        outcome: 'active_twin',
      });
    });

    it('of 20 active webhooks moved concurrently onto one new key, exactly one moves', async () => {
      const records = Array.from({ length: 20 }, () => webhookRecord());
      for (const record of records) await ctx.store.insertWebhook(record);
      const target = ['https://hooks.example.com/one', ['run.completed']] as const;
      const outcomes = await Promise.all(
        records.map(
          async (record) =>
            (
              await ctx.store.updateWebhookSubscription(
                'tenant_a',
                record.id,
                subscriptionOf(target[0], [...target[1]], record),
                LATER,
              )
            ).outcome,
        ),
      );
      expect(outcomes.filter((o) => o === 'updated')).toHaveLength(1);
      expect(outcomes.filter((o) => o === 'active_twin')).toHaveLength(19);
    });

    it('rotates the sealed secret and stamps updatedAt; deletes', async () => {
      const record = webhookRecord();
      await ctx.store.insertWebhook(record);
      const rotated = await ctx.store.rotateWebhookSecret(
        'tenant_a',
        record.id,
        'sealed:new',
        null,
        LATER,
        null,
      );
      expect(rotated).toEqual({ ...record, secretSealed: 'sealed:new', updatedAt: LATER });
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual(rotated);
      expect(await ctx.store.deleteWebhook('tenant_a', record.id)).toBe(true);
      expect(await ctx.store.deleteWebhook('tenant_a', record.id)).toBe(false);
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toBeNull();
      expect(
        await ctx.store.rotateWebhookSecret('tenant_a', record.id, 'sealed:x', null, LATER, null),
      ).toBeNull();
    });

    it('keeps an ed25519 public key through insert, reads and a lease; a rotation sets or clears it', async () => {
      const record = webhookRecord({ events: ['run.completed'], publicKey: 'whpk_first' });
      await ctx.store.insertWebhook(record);
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual(record);
      expect(await ctx.store.listWebhooks('tenant_a', { limit: 10 })).toEqual([record]);
      // Leased by a worker, and by the publish itself.
      expect((await ctx.store.publishEvent(eventRecord(), deliveryId)).outcome).toBe('published');
      const [leased] = await ctx.store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 30_000, leaseId: 'l' });
      expect(leased!.webhook).toEqual(record);
      const handed = await ctx.store.publishEvent(eventRecord(), deliveryId, undefined, {
        limit: 1,
        leaseId: 'handoff',
        leaseMs: 30_000,
      });
      if (handed.outcome !== 'published') throw new Error('expected a new event');
      expect(handed.leased[0]!.webhook).toEqual(record);
      const rotated = await ctx.store.rotateWebhookSecret(
        'tenant_a',
        record.id,
        'sealed:pair',
        'whpk_second',
        LATER,
        null,
      );
      expect(rotated).toMatchObject({ secretSealed: 'sealed:pair', publicKey: 'whpk_second' });
      const shared = await ctx.store.rotateWebhookSecret(
        'tenant_a',
        record.id,
        'sealed:shared',
        null,
        LATER,
        null,
      );
      expect(shared).toMatchObject({ secretSealed: 'sealed:shared', publicKey: null });
      expect(await (await ctx.peer()).getWebhook('tenant_a', record.id)).toEqual(shared);
    });

    it('a rotation with an overlap keeps the secret it replaced, as stored, until the given time', async () => {
      const record = webhookRecord();
      await ctx.store.insertWebhook(record);
      const rotated = await ctx.store.rotateWebhookSecret(
        'tenant_a',
        record.id,
        'sealed:new',
        null,
        ROTATED,
        OVERLAP_END,
      );
      const expected = {
        ...record,
        secretSealed: 'sealed:new',
        previousSecretSealed: record.secretSealed,
        previousSecretExpiresAt: OVERLAP_END,
        updatedAt: ROTATED,
      };
      expect(rotated).toEqual(expected);
      expect(rotated!.previousSecretExpiresAt!.getTime()).toBe(OVERLAP_END.getTime());
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual(expected);
      expect(await ctx.store.listWebhooks('tenant_a', { limit: 10 })).toEqual([expected]);
      const peer = await ctx.peer();
      expect(await peer.getWebhook('tenant_a', record.id)).toEqual(expected);
    });

    it('a second rotation with an overlap keeps only the secret it replaced; one without clears it', async () => {
      const record = webhookRecord();
      await ctx.store.insertWebhook(record);
      await ctx.store.rotateWebhookSecret('tenant_a', record.id, 'sealed:second', null, ROTATED, OVERLAP_END);
      const again = await ctx.store.rotateWebhookSecret(
        'tenant_a',
        record.id,
        'sealed:third',
        null,
        ROTATED_AGAIN,
        OVERLAP_END_AGAIN,
      );
      const expected = {
        ...record,
        secretSealed: 'sealed:third',
        previousSecretSealed: 'sealed:second',
        previousSecretExpiresAt: OVERLAP_END_AGAIN,
        updatedAt: ROTATED_AGAIN,
      };
      expect(again).toEqual(expected);
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual(expected);

      const cleared = await ctx.store.rotateWebhookSecret(
        'tenant_a',
        record.id,
        'sealed:fourth',
        null,
        LATER,
        null,
      );
      const plain = {
        ...record,
        secretSealed: 'sealed:fourth',
        previousSecretSealed: null,
        previousSecretExpiresAt: null,
        updatedAt: LATER,
      };
      expect(cleared).toEqual(plain);
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual(plain);
      expect(await ctx.store.listWebhooks('tenant_a', { limit: 10 })).toEqual([plain]);
    });

    it('another tenant’s rotation, with or without an overlap, finds nothing and changes nothing', async () => {
      const record = webhookRecord();
      await ctx.store.insertWebhook(record);
      const rotated = await ctx.store.rotateWebhookSecret(
        'tenant_a',
        record.id,
        'sealed:new',
        null,
        ROTATED,
        OVERLAP_END,
      );
      expect(
        await ctx.store.rotateWebhookSecret(
          'tenant_b',
          record.id,
          'sealed:other',
          null,
          LATER,
          OVERLAP_END_AGAIN,
        ),
      ).toBeNull();
      expect(
        await ctx.store.rotateWebhookSecret('tenant_b', record.id, 'sealed:other', null, LATER, null),
      ).toBeNull();
      expect(await ctx.store.getWebhook('tenant_a', record.id)).toEqual(rotated);
      expect(await ctx.store.getWebhook('tenant_b', record.id)).toBeNull();
      expect(
        await ctx.store.rotateWebhookSecret('tenant_a', 'wh_missing', 'sealed:x', null, LATER, OVERLAP_END),
      ).toBeNull();
    });

    it('a leased delivery’s webhook carries the previous secret and its expiry', async () => {
      const record = webhookRecord({ events: ['run.completed'] });
      await ctx.store.insertWebhook(record);
      const rotated = await ctx.store.rotateWebhookSecret(
        'tenant_a',
        record.id,
        'sealed:new',
        null,
        ROTATED,
        OVERLAP_END,
      );
      expect(rotated).toMatchObject({
        previousSecretSealed: record.secretSealed,
        previousSecretExpiresAt: OVERLAP_END,
      });

      // Leased by a worker from the due deliveries.
      expect((await ctx.store.publishEvent(eventRecord(), deliveryId)).outcome).toBe('published');
      const leased = await ctx.store.leaseDeliveries({
        now: T0,
        limit: 10,
        leaseMs: 30_000,
        leaseId: 'lease-1',
      });
      expect(leased).toHaveLength(1);
      expect(leased[0]!.webhook).toEqual(rotated);

      // Leased by the publish itself.
      const handed = await ctx.store.publishEvent(eventRecord(), deliveryId, undefined, {
        limit: 1,
        leaseId: 'handoff-1',
        leaseMs: 30_000,
      });
      if (handed.outcome !== 'published') throw new Error('expected a new event');
      expect(handed.leased).toHaveLength(1);
      expect(handed.leased[0]!.webhook).toEqual(rotated);
    });
  });
}
