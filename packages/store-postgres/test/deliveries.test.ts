import { isKeyhookError, silentLogger } from '@keyhook/core';
import { DELIVERY_RULES } from '@keyhook/core/store';
import { T0, webhookRecord } from '@keyhook/store-conformance';
import { FaultProxy } from '@keyhook/testing/fault-proxy';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { checkOut } from '../src/checkout.js';
import { createPostgresStore, type PostgresStore } from '../src/index.js';
import { statements as leaseStatements } from '../src/operations/lease-deliveries.js';
import { statements as recoverStatements } from '../src/operations/recover-failed-deliveries.js';
import { purgeLockKey } from '../src/schema-name.js';
import { statementsIn } from '../src/statements.js';
import type { StoreContext } from '../src/store-context.js';
import {
  deliveryId,
  eventRecord,
  publishThenLease,
  recordPoolQueries,
  Schemas,
  success,
} from './delivery-helpers.js';

const available = await postgresAvailable();

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
const schemas = new Schemas(admin);

/** A webhook of tenant_a on run.completed, and one event published to it. */
async function oneDelivery(store: PostgresStore) {
  const webhook = webhookRecord({ events: ['run.completed'] });
  await store.insertWebhook(webhook);
  const outcome = await store.publishEvent(eventRecord(), deliveryId);
  if (outcome.outcome !== 'published') throw new Error('expected a new event');
  return { webhook, delivery: outcome.deliveries[0]! };
}

(available ? describe : describe.skip)('PostgresStore deliveries', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
  });

  describe('successes recorded together (group commit)', () => {
    it('records concurrent successes in batches; a lost lease and a failure count to reset each get their own answer', async () => {
      const store = await schemas.open('batch', 8);
      let recording: ReturnType<typeof recordPoolQueries> | undefined;
      const statements = () => recording?.sent.map((q) => q.text) ?? [];
      try {
        const webhooks = [];
        for (let i = 0; i < 4; i++) {
          const webhook = webhookRecord({ events: ['run.completed'], url: `https://h${i}.example.com/hook` });
          await store.insertWebhook(webhook);
          webhooks.push(webhook);
        }
        // The last endpoint has failed twice: its successes must reset the count.
        await admin.query(
          `UPDATE "${store.schema}".keyhook_webhooks SET consecutive_failures = 2 WHERE id = $1`,
          [webhooks[3]!.id],
        );
        const leased = await publishThenLease(store, 10, 100, 'batch');
        expect(leased).toHaveLength(40);
        recording = recordPoolQueries();
        const outcomes = await Promise.all(
          leased.map(({ delivery }, index) =>
            // One of them lost its lease meanwhile.
            store.completeAttempt(success(delivery, index === 7 ? 'not-the-lease' : delivery.leaseId!)),
          ),
        );
        recording?.stop();
        expect(outcomes.map((outcome) => outcome.outcome)).toEqual(
          leased.map((_, index) => (index === 7 ? 'lease_lost' : 'recorded')),
        );
        // Fewer statements than successes: they went together.
        const batches = statements().filter((text) => text.includes('json_to_recordset')).length;
        expect(batches).toBeGreaterThan(0);
        expect(batches).toBeLessThan(20);
        const rows = await admin.query(
          `SELECT d.status, count(a.*)::int AS attempts FROM "${store.schema}".keyhook_deliveries AS d
            LEFT JOIN "${store.schema}".keyhook_delivery_attempts AS a ON a.delivery_id = d.id
            GROUP BY d.id, d.status`,
        );
        const tally = rows.rows.map((row) => `${row.status}:${row.attempts}`).sort();
        expect(tally.filter((t) => t === 'succeeded:1')).toHaveLength(39);
        expect(tally.filter((t) => t === 'in_flight:0')).toHaveLength(1);
        const failures = await admin.query(
          `SELECT consecutive_failures FROM "${store.schema}".keyhook_webhooks WHERE id = $1`,
          [webhooks[3]!.id],
        );
        expect(failures.rows[0].consecutive_failures).toBe(0);
      } finally {
        recording?.stop();
        await store.close();
      }
    });
  });

  describe('publishes and successes written together (group commit)', () => {
    it('go in one statement when both wait; each gets its own answer, and a failing publish among them fails alone', async () => {
      const store = await schemas.open('mixed_batch', 8);
      let recording: ReturnType<typeof recordPoolQueries> | undefined;
      const mixed = () =>
        recording?.sent.filter(
          (q) => q.text.includes('completed_webhooks') && q.text.includes('keyhook_events'),
        ).length ?? 0;
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        const leased = await publishThenLease(store, 16, 16, 'mixed');
        expect(leased).toHaveLength(16);
        const burst = async (completions: typeof leased, events: ReturnType<typeof eventRecord>[]) => {
          const settled = await Promise.allSettled([
            ...completions.map(({ delivery }) => store.completeAttempt(success(delivery, 'mixed'))),
            ...events.map((event) => store.publishEvent(event, deliveryId)),
          ]);
          return settled.map((o) => (o.status === 'fulfilled' ? o.value.outcome : 'rejected'));
        };
        recording = recordPoolQueries();
        const clean = await burst(
          leased.slice(0, 8),
          Array.from({ length: 8 }, () => eventRecord()),
        );
        expect(clean).toEqual([...Array(8).fill('recorded'), ...Array(8).fill('published')]);
        expect(mixed()).toBeGreaterThan(0);
        const statements = recording.sent.length;
        expect(statements).toBeLessThan(8);
        // Postgres refuses a NUL in text: the statement fails, and each call is tried alone.
        const bad = eventRecord({ payload: '{"bad":"\u0000"}' });
        const withBad = await burst(leased.slice(8), [eventRecord(), bad, eventRecord()]);
        recording.stop();
        expect(withBad).toEqual([...Array(8).fill('recorded'), 'published', 'rejected', 'published']);
        const rows = await admin.query(
          `SELECT d.status, count(a.*)::int AS attempts FROM "${store.schema}".keyhook_deliveries AS d
            LEFT JOIN "${store.schema}".keyhook_delivery_attempts AS a ON a.delivery_id = d.id
            GROUP BY d.id, d.status`,
        );
        const tally = rows.rows.map((row) => `${row.status}:${row.attempts}`);
        expect(tally.filter((t) => t === 'succeeded:1')).toHaveLength(16);
        expect(tally.filter((t) => t === 'pending:0')).toHaveLength(10);
        expect(tally).toHaveLength(26);
        expect(await schemas.count(store.schema, 'keyhook_events')).toBe(26);
      } finally {
        recording?.stop();
        await store.close();
      }
    });
  });

  describe('what the group commit answers', () => {
    it('is what it wrote: the same records a later read gives, every time to the millisecond, before 1970 too', async () => {
      const store = await schemas.open('batch_answers', 8);
      let recording: ReturnType<typeof recordPoolQueries> | undefined;
      try {
        const active = webhookRecord({ events: ['run.completed'], url: 'https://a.example.com/hook' });
        const held = webhookRecord({ events: ['run.completed'], url: 'https://b.example.com/hook' });
        await store.insertWebhook(active);
        await store.insertWebhook({ ...held, status: DELIVERY_RULES.hold.endpointStatus });
        const toComplete = await publishThenLease(store, 4, 4, 'answers');
        expect(toComplete).toHaveLength(4);
        const times = [
          new Date('1969-12-31T23:59:59.999Z'),
          new Date('2026-12-07T23:59:59.999Z'),
          new Date('2100-02-28T12:00:00.001Z'),
        ];
        const lease = { limit: 1, leaseId: 'handoff', leaseMs: 86_400_001 };
        // Payloads of characters of several bytes, and escapes, ahead of the others in the batch.
        const payloads = ['{"note":"naïve — 🚀 \\u0000 \\"quoted\\""}', '{"n":2}', '{}'];
        recording = recordPoolQueries();
        const [completed, published] = await Promise.all([
          Promise.all(
            toComplete.map(({ delivery }, k) => {
              const completion = success(delivery, 'answers');
              const at = times[k % times.length]!;
              return store.completeAttempt({
                ...completion,
                attempt: { ...completion.attempt, startedAt: new Date(at.getTime() - 7) },
                at,
              });
            }),
          ),
          Promise.all(
            times.map((createdAt, k) =>
              store.publishEvent(
                eventRecord({ createdAt, payload: payloads[k] }),
                deliveryId,
                undefined,
                lease,
              ),
            ),
          ),
        ]);
        recording.stop();
        // The successes rode with the publishes: the batched statement, with its inputs, wrote them.
        expect(
          recording.sent.some(
            (q) => q.text.includes('completed_webhooks') && q.text.includes('keyhook_events'),
          ),
        ).toBe(true);
        for (const outcome of completed) {
          if (outcome.outcome !== 'recorded') throw new Error(`expected recorded, got ${outcome.outcome}`);
          const read = await store.getDelivery(
            outcome.delivery.tenantId,
            outcome.delivery.webhookId,
            outcome.delivery.id,
          );
          expect(outcome.delivery).toEqual(read!.delivery);
          expect(read!.attempts.at(-1)!.startedAt).toEqual(outcome.delivery.lastAttemptAt);
        }
        const statuses = new Set<string>();
        for (const [k, outcome] of published.entries()) {
          if (outcome.outcome !== 'published') throw new Error(`expected published, got ${outcome.outcome}`);
          expect(outcome.event.createdAt).toEqual(times[k]);
          expect(outcome.deliveries).toHaveLength(2);
          for (const delivery of outcome.deliveries) {
            statuses.add(delivery.status);
            const read = await store.getDelivery(delivery.tenantId, delivery.webhookId, delivery.id);
            expect(delivery).toEqual(read!.delivery);
            expect(read!.event.createdAt).toEqual(times[k]);
            expect(read!.event.payload).toBe(payloads[k]);
          }
          expect(outcome.leased.map((l) => l.delivery.dueAt)).toEqual([
            new Date(times[k]!.getTime() + lease.leaseMs),
          ]);
        }
        expect([...statuses].sort()).toEqual(['held', 'in_flight']);
      } finally {
        recording?.stop();
        await store.close();
      }
    });
  });

  describe("a leased delivery's endpoint (the store's cache of endpoints)", () => {
    const lease = { limit: 1, leaseId: 'handoff', leaseMs: 60_000 };
    /** A lone publish that leases its one delivery; the endpoint it hands over. */
    async function handedOver(store: PostgresStore) {
      const outcome = await store.publishEvent(eventRecord(), deliveryId, undefined, lease);
      if (outcome.outcome !== 'published') throw new Error('expected a new event');
      expect(outcome.leased).toHaveLength(1);
      return outcome.leased[0]!.webhook;
    }
    /** A publish, then a claim of its delivery (each under a lease of its own); the endpoint it leased. */
    let claims = 0;
    async function claimed(store: PostgresStore) {
      await store.publishEvent(eventRecord(), deliveryId);
      const leased = await store.leaseDeliveries({
        now: T0,
        limit: 10,
        leaseMs: 60_000,
        leaseId: `claim_${++claims}`,
      });
      expect(leased).toHaveLength(1);
      return leased[0]!.webhook;
    }
    const endpointReads = (recording: ReturnType<typeof recordPoolQueries>) =>
      recording.sent.filter((q) => /WHERE \(tenant_id, id\) IN \(SELECT \* FROM unnest/.test(q.text)).length;

    for (const [way, leasedEndpoint] of [
      ['a publish hands over', handedOver],
      ['a claim leases', claimed],
    ] as const) {
      it(`${way} the endpoint as it is: read once while unchanged, read again after each change, one made in the same millisecond too`, async () => {
        const store = await schemas.open('endpoint_cache', 4);
        let recording: ReturnType<typeof recordPoolQueries> | undefined;
        try {
          const webhook = webhookRecord({ events: ['run.completed'] });
          await store.insertWebhook(webhook);
          const stored = () => store.getWebhook(webhook.tenantId, webhook.id);
          recording = recordPoolQueries();
          const first = await leasedEndpoint(store);
          expect(first).toEqual(await stored());
          expect(await leasedEndpoint(store)).toBe(first);
          expect(endpointReads(recording)).toBe(1);

          // A rotation stamped with the same updatedAt: only the row's version tells it apart.
          const rotated = await store.rotateWebhookSecret(
            webhook.tenantId,
            webhook.id,
            'sealed:rotated',
            null,
            webhook.updatedAt,
            null,
          );
          expect(rotated!.updatedAt).toEqual(first.updatedAt);
          const afterRotation = await leasedEndpoint(store);
          expect(afterRotation.secretSealed).toBe('sealed:rotated');
          expect(afterRotation).toEqual(await stored());
          expect(endpointReads(recording)).toBe(2);

          const url = 'https://moved.example.com/hook';
          const moved = await store.updateWebhookSubscription(
            webhook.tenantId,
            webhook.id,
            { from: webhook.twinKey, url, events: webhook.events, twinKey: `${webhook.twinKey}-moved` },
            new Date(webhook.updatedAt.getTime() + 1),
          );
          expect(moved.outcome).toBe('updated');
          expect((await leasedEndpoint(store)).url).toBe(url);
          expect(await leasedEndpoint(store)).toEqual(await stored());
          expect(endpointReads(recording)).toBe(3);
        } finally {
          recording?.stop();
          await store.close();
        }
      });
    }

    it('none for an endpoint deleted since its version was read, or of another tenant, and a publish that cannot read its endpoint still answers, its delivery claimed when the lease runs out', async () => {
      const store = await schemas.open('endpoint_cache_gone', 4);
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        const ctx = (store as unknown as { ctx: StoreContext }).ctx;
        const { rows } = await admin.query(
          `SELECT xmin::text AS version FROM "${store.schema}".keyhook_webhooks WHERE id = $1`,
          [webhook.id],
        );
        const version = rows[0].version as string;
        expect(await ctx.webhooks.resolve(ctx, ctx.pool, [[webhook.tenantId, webhook.id, version]])).toEqual([
          await store.getWebhook(webhook.tenantId, webhook.id),
        ]);
        // Another tenant's id is none of this one's, remembered or not.
        const asOther = (v: string) => ctx.webhooks.resolve(ctx, ctx.pool, [['tenant_b', webhook.id, v]]);
        expect(await asOther(version)).toEqual([null]);
        expect(await asOther(`${version}0`)).toEqual([null]);
        await store.deleteWebhook(webhook.tenantId, webhook.id);
        expect(
          await ctx.webhooks.resolve(ctx, ctx.pool, [[webhook.tenantId, webhook.id, `${version}0`]]),
        ).toEqual([null]);

        // The publish reads no description; the endpoint's read does, and fails.
        const other = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(other);
        const table = `"${store.schema}".keyhook_webhooks`;
        await admin.query(`ALTER TABLE ${table} RENAME COLUMN description TO description_away`);
        let outcome: Awaited<ReturnType<PostgresStore['publishEvent']>>;
        try {
          outcome = await store.publishEvent(eventRecord(), deliveryId, undefined, { ...lease, leaseMs: 1 });
        } finally {
          await admin.query(`ALTER TABLE ${table} RENAME COLUMN description_away TO description`);
        }
        if (outcome.outcome !== 'published') throw new Error('expected a new event');
        expect(outcome.deliveries.map((d) => d.status)).toEqual(['in_flight']);
        expect(outcome.leased).toEqual([]);
        const claimed = await store.leaseDeliveries({
          now: new Date(T0.getTime() + 2),
          limit: 10,
          leaseMs: 60_000,
          leaseId: 'later',
        });
        expect(claimed.map((l) => [l.delivery.id, l.webhook])).toEqual([
          [outcome.deliveries[0]!.id, await store.getWebhook(other.tenantId, other.id)],
        ]);
      } finally {
        await store.close();
      }
    });

    it('a claim that cannot read its endpoint fails, and its lease, ended by the next claim, leases the delivery again', async () => {
      const store = await schemas.open('endpoint_cache_claim_fails', 4);
      const table = `"${store.schema}".keyhook_webhooks`;
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        const outcome = await store.publishEvent(eventRecord(), deliveryId);
        if (outcome.outcome !== 'published') throw new Error('expected a new event');
        // The claim reads no description; the endpoint's read does, and fails.
        await admin.query(`ALTER TABLE ${table} RENAME COLUMN description TO description_away`);
        const claim = { now: T0, limit: 10, leaseMs: 60_000 };
        try {
          await expect(store.leaseDeliveries({ ...claim, leaseId: 'lost' })).rejects.toThrow();
        } finally {
          await admin.query(`ALTER TABLE ${table} RENAME COLUMN description_away TO description`);
        }
        const again = await store.leaseDeliveries({
          ...claim,
          leaseId: 'next',
          endLeases: [{ leaseId: 'lost' }],
        });
        expect(again.map((l) => [l.delivery.id, l.webhook])).toEqual([
          [outcome.deliveries[0]!.id, await store.getWebhook(webhook.tenantId, webhook.id)],
        ]);
      } finally {
        await store.close();
      }
    });
  });

  describe('publishes written together (group commit)', () => {
    it('concurrent publishes go in fewer statements; each gets its own answer, a replay and a failure included', async () => {
      const store = await schemas.open('publish_batch', 8);
      let recording: ReturnType<typeof recordPoolQueries> | undefined;
      const statements = () => recording?.sent.map((q) => q.text) ?? [];
      try {
        const a = webhookRecord({ events: ['run.completed', 'run.failed'] });
        const disabled = webhookRecord({
          events: ['run.completed'],
          status: 'disabled',
          disabledReason: 'manual',
        });
        const b = webhookRecord({ tenantId: 'tenant_b', events: ['run.failed'] });
        for (const webhook of [a, disabled, b]) await store.insertWebhook(webhook);
        const replayed = eventRecord();
        await store.publishEvent(replayed, deliveryId);
        recording = recordPoolQueries();
        const twice = eventRecord({ tenantId: 'tenant_b', type: 'run.failed' });
        const events = [
          ...Array.from({ length: 30 }, (_, i) =>
            i % 3 === 0
              ? eventRecord({ type: 'run.failed' })
              : i % 3 === 1
                ? eventRecord()
                : eventRecord({ tenantId: 'tenant_b', type: 'run.failed' }),
          ),
          replayed,
          twice,
          twice,
          // Postgres refuses a NUL in text: this one fails, and only this one.
          eventRecord({ payload: '{"bad":"\u0000"}' }),
        ];
        // The bad one goes last, in a burst of its own: a failed batch is tried again call by call.
        const good = await Promise.allSettled(
          events.slice(0, -1).map((event) => store.publishEvent(event, deliveryId)),
        );
        const publishes = statements().filter(
          (text) => text.includes('INSERT INTO') && text.includes('keyhook_events'),
        );
        expect(publishes.length).toBeLessThan(events.length / 2);
        // The burst's first goes alone, as publishOne (its columns bound one by one); the rest
        // wait for it and go in batches, their events as one JSON parameter (docs/decisions.md §8.14).
        const batched = publishes.filter((text) => text.includes('json_to_recordset'));
        expect(batched.length).toBeGreaterThan(0);
        expect(publishes.length - batched.length).toBeGreaterThan(0);
        const bad = await Promise.allSettled(
          events.slice(-3).map((event) => store.publishEvent(event, deliveryId)),
        );
        recording?.stop();
        expect(bad.slice(0, 2).map((o) => o.status === 'fulfilled' && o.value.outcome)).toEqual([
          'duplicate',
          'duplicate',
        ]);
        const outcomes = [...good, bad[2]!];
        const results = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : o.reason));
        expect(outcomes.at(-1)!.status).toBe('rejected');
        expect(
          results.slice(0, -1).every((r) => r.outcome === 'published' || r.outcome === 'duplicate'),
        ).toBe(true);
        expect(results[30]).toEqual({ outcome: 'duplicate', event: replayed });
        expect([results[31].outcome, results[32].outcome].sort()).toEqual(['duplicate', 'published']);
        for (const [i, event] of events.slice(0, 30).entries()) {
          const outcome = results[i];
          expect(outcome.event).toEqual(event);
          const expected =
            event.tenantId === 'tenant_b'
              ? [[b.id, 'pending']]
              : event.type === 'run.failed'
                ? [[a.id, 'pending']]
                : [
                    [a.id, 'pending'],
                    [disabled.id, 'held'],
                  ];
          expect(
            outcome.deliveries
              .map((d: { webhookId: string; status: string }) => [d.webhookId, d.status])
              .sort(),
          ).toEqual(expected.sort());
        }
        // In the tables: 30 + 1 + 1 events, each with exactly its deliveries.
        expect(await schemas.count(store.schema, 'keyhook_events')).toBe(32);
        expect(await schemas.count(store.schema, 'keyhook_deliveries')).toBe(
          2 + 10 * 1 + 10 * 2 + 10 * 1 + 1,
        );
      } finally {
        recording?.stop();
        await store.close();
      }
    });
  });

  describe('prepared statements', () => {
    /** The names of the statements a publish, a lease (no endpoint limited: the plain claim) and a success send, by kind. */
    async function namesSent(store: PostgresStore) {
      const recording = recordPoolQueries();
      try {
        const { delivery } = await oneDelivery(store);
        const [leased] = await store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 60_000, leaseId: 'prep' });
        expect(leased!.delivery.id).toBe(delivery.id);
        const outcome = await store.completeAttempt(success(leased!.delivery, 'prep'));
        expect(outcome.outcome).toBe('recorded');
      } finally {
        recording.stop();
      }
      const names = new Map<string, string | undefined>();
      for (const { text, name } of recording.sent) {
        const kind =
          text.includes('INSERT INTO') && text.includes('keyhook_events')
            ? 'publish'
            : text.includes('SKIP LOCKED')
              ? 'lease'
              : text.includes("status = 'succeeded'")
                ? 'success'
                : undefined;
        if (kind) names.set(kind, name);
      }
      return names;
    }

    it('named for publish, the plain lease claim and completion by default; none with preparedStatements: false', async () => {
      const prepared = await schemas.open('prepared');
      const schema = schemas.fresh('unprepared');
      const unprepared = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema,
        poolSize: 2,
        preparedStatements: false,
      });
      try {
        const named = await namesSent(prepared);
        expect(named.get('publish')).toMatch(/^keyhook_[0-9a-f]{32}$/);
        expect(named.get('success')).toMatch(/^keyhook_[0-9a-f]{32}$/);
        expect(named.get('lease')).toMatch(/^keyhook_[0-9a-f]{32}$/);
        // The name is the text's: another schema's store names its publish otherwise.
        const unnamed = await namesSent(unprepared);
        expect([...unnamed.keys()].sort()).toEqual(['lease', 'publish', 'success']);
        expect([...unnamed.values()].every((name) => name === undefined)).toBe(true);
        const other = await schemas.open('prepared_other');
        try {
          expect((await namesSent(other)).get('publish')).not.toBe(named.get('publish'));
        } finally {
          await other.close();
        }
      } finally {
        await prepared.close();
        await unprepared.close();
      }
    });
  });

  describe('the claims (docs/decisions.md §8.18)', () => {
    it('the plain claim alone with no endpoint limited; the pacing claim after it when it meets one, then alone while the store paces, until one meets none', async () => {
      const store = await schemas.open('claims');
      const sql = statementsIn(store.schema, leaseStatements);
      // The plain claim goes on the pool, the pacing one in a transaction: both seen on the client.
      const claims = async (at: Date) => {
        const sent: string[] = [];
        const query = pg.Client.prototype.query;
        pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
          const { text } = args[0] as { text: string };
          if (text === sql.leaseUnlimited) sent.push('plain');
          if (text === sql.lockPaced) sent.push('pacing');
          return (query as (...a: unknown[]) => unknown).apply(this, args);
        } as typeof query;
        try {
          const leased = await store.leaseDeliveries({
            now: at,
            limit: 10,
            leaseMs: 60_000,
            leaseId: `c${at.getTime()}`,
          });
          return { sent, leased: leased.length };
        } finally {
          pg.Client.prototype.query = query;
        }
      };
      try {
        await store.insertWebhook(
          webhookRecord({ events: ['run.completed'], url: 'https://free.example.com/' }),
        );
        await store.publishEvent(eventRecord(), deliveryId);
        expect(await claims(T0)).toEqual({ sent: ['plain'], leased: 1 });

        // A limited endpoint (1 per second) with three due: one now, the others wait for slots.
        await store.insertWebhook(
          webhookRecord({
            events: ['run.paced'],
            url: 'https://paced.example.com/',
            deliveryRate: { perSecond: 1 },
          }),
        );
        for (let i = 0; i < 3; i++) await store.publishEvent(eventRecord({ type: 'run.paced' }), deliveryId);
        expect(await claims(T0)).toEqual({ sent: ['plain', 'pacing'], leased: 1 });
        const at = (s: number) => new Date(T0.getTime() + s * 1000);
        expect(await claims(at(1))).toEqual({ sent: ['pacing'], leased: 1 });
        expect(await claims(at(2))).toEqual({ sent: ['pacing'], leased: 1 });
        // The backlog is sent: one pacing claim meets none, and the plain claim is first again.
        expect(await claims(at(3))).toEqual({ sent: ['pacing'], leased: 0 });
        expect(await claims(at(4))).toEqual({ sent: ['plain'], leased: 0 });
      } finally {
        await store.close();
      }
    });
  });

  describe('retention', () => {
    /** One delivery, marked succeeded at T0 straight in the table. */
    async function finishedDelivery(store: PostgresStore) {
      const { delivery } = await oneDelivery(store);
      await admin.query(
        `UPDATE "${store.schema}".keyhook_deliveries
          SET status = 'succeeded', due_at = NULL, lease_id = NULL, updated_at = $2 WHERE id = $1`,
        [delivery.id, T0],
      );
      return delivery;
    }
    const later = new Date(T0.getTime() + 60_000);

    it('VACUUMs the purged tables itself once it has purged 10,000 rows, so their room is reused', async () => {
      const store = await schemas.open('purgevacuum');
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        const q = (table: string) => `"${store.schema}".${table}`;
        await admin.query(
          `INSERT INTO ${q('keyhook_events')} (tenant_id, id, type, payload, created_at)
            SELECT 'tenant_a', 'evt_' || g, 'run.completed', '{}', $1 FROM generate_series(1, 6000) AS g`,
          [T0],
        );
        await admin.query(
          `INSERT INTO ${q('keyhook_deliveries')} (id, tenant_id, webhook_id, event_id, event_type, status,
              attempts, due_at, lease_id, held_since, last_attempt_at, created_at, updated_at)
            SELECT 'dlv_' || g, 'tenant_a', $2, 'evt_' || g, 'run.completed', 'succeeded', 1, NULL, NULL, NULL,
              $1, $1, $1
            FROM generate_series(1, 6000) AS g`,
          [T0, webhook.id],
        );
        const lastVacuum = async () =>
          (
            await admin.query(
              `SELECT last_vacuum FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'keyhook_deliveries'`,
              [store.schema],
            )
          ).rows[0]?.last_vacuum ?? null;
        expect(await lastVacuum()).toBeNull();
        let purged = 0;
        for (let round = 0; round < 30; round++) {
          const outcome = await store.purgeFinishedDeliveries(later, 500);
          purged += outcome.deliveries + outcome.events;
          if (outcome.deliveries === 0 && outcome.events === 0) break;
        }
        expect(purged).toBe(12_000);
        await expect.poll(lastVacuum, { timeout: 5000 }).not.toBeNull();
      } finally {
        await store.close();
      }
    });

    it('purges on one instance at a time: another skips its round while the lock is held', async () => {
      const store = await schemas.open('purgelock');
      const holder = await checkOut(admin);
      try {
        await finishedDelivery(store);
        await holder.query('SELECT pg_advisory_lock($1::bigint)', [purgeLockKey(store.schema)]);
        expect(await store.purgeFinishedDeliveries(later, 10)).toEqual({
          deliveries: 0,
          events: 0,
          skipped: true,
        });
        await holder.query('SELECT pg_advisory_unlock($1::bigint)', [purgeLockKey(store.schema)]);
        expect(await store.purgeFinishedDeliveries(later, 10)).toEqual({
          deliveries: 1,
          events: 1,
          skipped: false,
        });
      } finally {
        holder.release();
        await store.close();
      }
    });

    it('passes over, without waiting, a finished delivery another transaction holds', async () => {
      const store = await schemas.open('purgeskip');
      const retrier = await checkOut(admin);
      try {
        const held = await finishedDelivery(store);
        await retrier.query('BEGIN');
        await retrier.query(`SELECT id FROM "${store.schema}".keyhook_deliveries WHERE id = $1 FOR UPDATE`, [
          held.id,
        ]);
        const started = performance.now();
        expect(await store.purgeFinishedDeliveries(later, 10)).toEqual({
          deliveries: 0,
          events: 0,
          skipped: false,
        });
        expect(performance.now() - started).toBeLessThan(1000);
        await retrier.query('ROLLBACK');
        expect(await store.purgeFinishedDeliveries(later, 10)).toEqual({
          deliveries: 1,
          events: 1,
          skipped: false,
        });
      } finally {
        await retrier.query('ROLLBACK');
        retrier.release();
        await store.close();
      }
    });
  });

  describe('bulk recovery of failed deliveries', () => {
    const later = new Date(T0.getTime() + 60_000);
    const window = [new Date(T0.getTime() - 1), later] as const;

    /** `count` deliveries of a new webhook, one event each, created 1 ms apart, marked failed straight in the table. */
    async function failedDeliveries(store: PostgresStore, count: number) {
      const webhook = webhookRecord({ events: ['run.completed'] });
      await store.insertWebhook(webhook);
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const outcome = await store.publishEvent(
          eventRecord({ createdAt: new Date(T0.getTime() + i) }),
          deliveryId,
        );
        if (outcome.outcome !== 'published') throw new Error('expected a new event');
        ids.push(outcome.deliveries[0]!.id);
      }
      await admin.query(
        `UPDATE "${store.schema}".keyhook_deliveries
          SET status = 'failed', due_at = NULL, attempts = 1, last_attempt_at = created_at
          WHERE webhook_id = $1`,
        [webhook.id],
      );
      return { webhook, ids };
    }

    it('another instance hears one wake-up per batch that queued something due; none for nothing, none for a hold', async () => {
      const store = await schemas.open('recoverwake');
      const peer = await schemas.peerOf(store, { verifiedKeyCache: true });
      try {
        const { webhook } = await failedDeliveries(store, 3);
        const paused = await failedDeliveries(store, 2);
        await store.setWebhookStatus('tenant_a', paused.webhook.id, 'disabled', 'manual', T0);
        const listener = await schemas.watch(peer);
        const recover = () =>
          store.recoverFailedDeliveries('tenant_a', webhook.id, ...window, later, 2, later);
        expect(await recover()).toBe(2);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(1);
        expect(await recover()).toBe(1);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(2);
        expect(await recover()).toBe(0);

        // On a disabled endpoint they are held, not due: no one is woken.
        expect(
          await store.recoverFailedDeliveries('tenant_a', paused.webhook.id, ...window, later, 10, later),
        ).toBe(2);
        await schemas.caughtUp(peer);
        expect(listener.calls()).toBe(2);
        listener.stop();
      } finally {
        await peer.close();
        await store.close();
      }
    });

    it('passes over, without waiting, a failed delivery another transaction holds, and queues it next time', async () => {
      const store = await schemas.open('recoverskip');
      const retrier = await checkOut(admin);
      try {
        const { webhook, ids } = await failedDeliveries(store, 2);
        await retrier.query('BEGIN');
        await retrier.query(`SELECT id FROM "${store.schema}".keyhook_deliveries WHERE id = $1 FOR UPDATE`, [
          ids[0],
        ]);
        const recover = () =>
          store.recoverFailedDeliveries('tenant_a', webhook.id, ...window, later, 10, later);
        const started = performance.now();
        expect(await recover()).toBe(1);
        expect(performance.now() - started).toBeLessThan(1000);
        const pending = await store.listDeliveries('tenant_a', webhook.id, { limit: 10, status: 'pending' });
        expect(pending.map((d) => d.id)).toEqual([ids[1]]);
        await retrier.query('ROLLBACK');
        expect(await recover()).toBe(1);
        expect(await recover()).toBe(0);
      } finally {
        await retrier.query('ROLLBACK');
        retrier.release();
        await store.close();
      }
    });

    it("reads a batch's own entries, oldest first, on the partial index of failed deliveries: no scan, no sort", async () => {
      const store = await schemas.open('recoverplan');
      const explainer = await checkOut(admin);
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        const q = (table: string) => `"${store.schema}".${table}`;
        // 30,000 deliveries of the endpoint, one in three failed, with statistics the planner has read.
        await admin.query(
          `INSERT INTO ${q('keyhook_events')} (tenant_id, id, type, payload, created_at)
            SELECT 'tenant_a', 'evt_' || lpad(g::text, 6, '0'), 'run.completed', '{}', $1::timestamptz + g * interval '1 ms'
            FROM generate_series(1, 30000) AS g`,
          [T0],
        );
        await admin.query(
          `INSERT INTO ${q('keyhook_deliveries')} (id, tenant_id, webhook_id, event_id, event_type, status,
              attempts, due_at, lease_id, held_since, last_attempt_at, created_at, updated_at)
            SELECT 'dlv_' || lpad(g::text, 6, '0'), 'tenant_a', $2, 'evt_' || lpad(g::text, 6, '0'), 'run.completed',
              CASE WHEN g % 3 = 0 THEN 'failed' ELSE 'succeeded' END, 1, NULL, NULL, NULL, $1,
              $1::timestamptz + g * interval '1 ms', $1
            FROM generate_series(1, 30000) AS g`,
          [T0, webhook.id],
        );
        await admin.query(`ANALYZE ${q('keyhook_deliveries')}`);
        // The store's own statement, run and rolled back.
        await explainer.query('BEGIN');
        const { rows } = await explainer.query(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${statementsIn(store.schema, recoverStatements).recoverFailed}`,
          [
            webhook.id,
            'tenant_a',
            T0,
            new Date(T0.getTime() + 60_000),
            500,
            'pending',
            later,
            null,
            later,
            later,
          ],
        );
        await explainer.query('ROLLBACK');
        interface PlanNode {
          'Node Type': string;
          'Index Name'?: string;
          'Relation Name'?: string;
          'Actual Rows': number;
          Plans?: PlanNode[];
        }
        const nodes: PlanNode[] = [];
        const walk = (node: PlanNode) => {
          nodes.push(node);
          for (const child of node.Plans ?? []) walk(child);
        };
        walk(rows[0]['QUERY PLAN'][0].Plan);
        expect(nodes.map((n) => n['Node Type'])).not.toContain('Sort');
        expect(nodes.map((n) => n['Node Type'])).not.toContain('Seq Scan');
        const batch = nodes.find((n) => n['Index Name'] === 'keyhook_deliveries_failed_idx');
        expect(batch, JSON.stringify(nodes.map((n) => [n['Node Type'], n['Index Name']]))).toBeDefined();
        // The walk stops at the limit: it read the entries it queued, not the endpoint's 10,000.
        expect(batch!['Actual Rows']).toBe(500);
        expect(
          await store.recoverFailedDeliveries('tenant_a', webhook.id, T0, later, later, 500, later),
        ).toBe(500);
      } finally {
        await explainer.query('ROLLBACK');
        explainer.release();
        await store.close();
      }
    });
  });

  describe('the lease and the webhook lock', () => {
    it('skips, without waiting, the deliveries of an endpoint another transaction is disabling', async () => {
      const store = await schemas.open('leaseskip');
      const disabler = await checkOut(admin);
      try {
        const { webhook, delivery } = await oneDelivery(store);
        await disabler.query('BEGIN');
        await disabler.query(
          `UPDATE "${store.schema}".keyhook_webhooks SET status = 'disabled', disabled_reason = 'manual' WHERE id = $1`,
          [webhook.id],
        );
        const started = performance.now();
        const request = { now: T0, limit: 10, leaseMs: 30_000, leaseId: 'l1' };
        expect(await store.leaseDeliveries(request)).toEqual([]);
        expect(performance.now() - started).toBeLessThan(1000);
        // The disable did not happen after all: the delivery is leased, with the webhook as it is.
        await disabler.query('ROLLBACK');
        const leased = await store.leaseDeliveries(request);
        expect(leased.map((l) => [l.delivery.id, l.webhook.status])).toEqual([[delivery.id, 'active']]);
      } finally {
        await disabler.query('ROLLBACK');
        disabler.release();
        await store.close();
      }
    });

    it('a success waiting on a failure counted meanwhile still resets the count (retried under the exclusive lock)', async () => {
      const store = await schemas.open('resetrace');
      const counter = await checkOut(admin);
      const failures = async () => {
        const { rows } = await admin.query(
          `SELECT consecutive_failures AS n FROM "${store.schema}".keyhook_webhooks`,
        );
        return rows[0].n;
      };
      try {
        const { delivery } = await oneDelivery(store);
        const [leased] = await store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 30_000, leaseId: 'l1' });
        expect(leased!.delivery.id).toBe(delivery.id);
        // A failure of another delivery, counted but not committed: the success reads a count of 0.
        await counter.query('BEGIN');
        await counter.query(
          `UPDATE "${store.schema}".keyhook_webhooks SET consecutive_failures = consecutive_failures + 1`,
        );
        const recorded = store.completeAttempt(success(delivery, 'l1'));
        await expect.poll(() => schemas.lockWaiters(store.schema), { timeout: 5000 }).toBe(1);
        await counter.query('COMMIT');
        expect(await recorded).toMatchObject({ outcome: 'recorded', delivery: { status: 'succeeded' } });
        expect(await failures()).toBe(0);
        const detail = await store.getDelivery('tenant_a', leased!.webhook.id, delivery.id);
        expect(detail!.attempts).toHaveLength(1);
      } finally {
        await counter.query('ROLLBACK');
        counter.release();
        await store.close();
      }
    });
  });

  describe('deleting a webhook (no foreign key cascades; migration 0019)', () => {
    it('waits for a publish that holds the webhook, then deletes what it wrote: no delivery is left behind', async () => {
      const store = await schemas.open('deleterace');
      const host = await checkOut(admin);
      try {
        const { webhook } = await oneDelivery(store);
        // A publish inside the host's transaction holds the webhook (FOR SHARE) until it commits.
        await host.query('BEGIN');
        expect((await store.publishEvent(eventRecord(), deliveryId, host)).outcome).toBe('published');
        const deleting = store.deleteWebhook('tenant_a', webhook.id);
        await expect.poll(() => schemas.lockWaiters(store.schema), { timeout: 5000 }).toBe(1);
        await host.query('COMMIT');
        expect(await deleting).toBe(true);
        expect(await schemas.count(store.schema, 'keyhook_deliveries')).toBe(0);
        expect(await schemas.count(store.schema, 'keyhook_delivery_attempts')).toBe(0);
        // Once it is gone, a publish finds no subscriber and writes none.
        const after = await store.publishEvent(eventRecord(), deliveryId);
        expect(after).toMatchObject({ outcome: 'published', deliveries: [] });
        expect(await schemas.count(store.schema, 'keyhook_deliveries')).toBe(0);
      } finally {
        await host.query('ROLLBACK');
        host.release();
        await store.close();
      }
    });
  });

  describe('delivery wake-ups (LISTEN/NOTIFY)', () => {
    it('another instance hears publish, requeue and re-enable; another schema hears nothing', async () => {
      const store = await schemas.open('wake');
      const peer = await schemas.peerOf(store, { verifiedKeyCache: true });
      const elsewhere = await schemas.open('wakeother', 4, { verifiedKeyCache: true });
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await store.insertWebhook(webhook);
        const listener = await schemas.watch(peer);
        const stranger = await schemas.watch(elsewhere);

        const published = await store.publishEvent(eventRecord(), deliveryId);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(1);
        if (published.outcome !== 'published') throw new Error('expected a new event');

        const [leased] = await store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 30_000, leaseId: 'l1' });
        await store.completeAttempt({
          tenantId: 'tenant_a',
          deliveryId: leased!.delivery.id,
          leaseId: 'l1',
          attempt: {
            deliveryId: leased!.delivery.id,
            tenantId: 'tenant_a',
            attempt: 1,
            startedAt: T0,
            durationMs: 3,
            statusCode: 410,
            error: 'HTTP 410',
            responseBody: '',
          },
          status: 'failed',
          dueAt: null,
          endpointFailures: 'increment',
          autoDisable: DELIVERY_RULES.autoDisable,
          at: T0,
        });
        await store.requeueDelivery('tenant_a', webhook.id, leased!.delivery.id, ['failed'], T0);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(2);

        await store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', T0);
        await store.setWebhookStatus('tenant_a', webhook.id, 'active', null, T0);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(3);

        // A held delivery is not due: publishing to a disabled endpoint wakes no one.
        await store.setWebhookStatus('tenant_a', webhook.id, 'disabled', 'manual', T0);
        await store.publishEvent(eventRecord(), deliveryId);
        await Promise.all([schemas.caughtUp(peer), schemas.caughtUp(elsewhere)]);
        expect(listener.calls()).toBe(3);
        expect(stranger.calls()).toBe(0);

        // The peer still listens (its key cache does): it hears the re-enable, and tells no one.
        listener.stop();
        await store.setWebhookStatus('tenant_a', webhook.id, 'active', null, T0);
        await schemas.caughtUp(peer);
        expect(listener.calls()).toBe(3);
        stranger.stop();
      } finally {
        await peer.close();
        await elsewhere.close();
        await store.close();
      }
    });

    it('another instance hears a test event to an active endpoint; none for one held on a disabled endpoint', async () => {
      const store = await schemas.open('testwake');
      const peer = await schemas.peerOf(store, { verifiedKeyCache: true });
      try {
        const active = webhookRecord({ events: ['run.failed'] });
        const disabled = webhookRecord({ status: 'disabled', disabledReason: 'manual' });
        await store.insertWebhook(active);
        await store.insertWebhook(disabled);
        const listener = await schemas.watch(peer);

        const sent = await store.publishTestEvent(eventRecord(), active.id, deliveryId());
        expect(sent).toMatchObject({ outcome: 'published', delivery: { status: 'pending' } });
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(1);

        const held = await store.publishTestEvent(eventRecord(), disabled.id, deliveryId());
        expect(held).toMatchObject({ outcome: 'published', delivery: { status: 'held' } });
        expect(await store.publishTestEvent(eventRecord(), 'wh_unknown', deliveryId())).toEqual({
          outcome: 'not_found',
        });
        await schemas.caughtUp(peer);
        expect(listener.calls()).toBe(1);
        listener.stop();
      } finally {
        await peer.close();
        await store.close();
      }
    });

    it('listening for deliveries does not turn on the verified-key cache', async () => {
      const store = await schemas.open('wakekeys');
      try {
        const listener = await schemas.watch(store);
        expect(store.keyChangeVersion()).toBeNull();
        listener.stop();
      } finally {
        await store.close();
      }
    });

    it('after its LISTEN connection drops and comes back, the listener is called (work may have been missed)', async () => {
      const proxy = await FaultProxy.start();
      const schema = schemas.fresh('wakedrop');
      const store = await createPostgresStore({
        connectionString: proxy.url(),
        schema,
        poolSize: 2,
        logger: silentLogger,
      });
      const publisher = await createPostgresStore({
        connectionString: POSTGRES_TEST_URL,
        schema,
        poolSize: 2,
      });
      try {
        const webhook = webhookRecord({ events: ['run.completed'] });
        await publisher.insertWebhook(webhook);
        const listener = await schemas.watch(store);
        proxy.reset();
        await expect.poll(listener.calls, { timeout: 10_000, interval: 10 }).toBe(1);
        // Listening again: another instance's publish is heard.
        await publisher.publishEvent(eventRecord(), deliveryId);
        await expect.poll(listener.calls, { timeout: 2000, interval: 2 }).toBe(2);
        listener.stop();
      } finally {
        await publisher.close();
        await store.close();
        await proxy.cut();
      }
    });

    it('every delivery method answers `unavailable` once the store is closed; watching is a no-op', async () => {
      const store = await schemas.open('dlvx');
      await store.close();
      const attempts = [
        () => store.publishEvent(eventRecord(), deliveryId),
        () => store.leaseDeliveries({ now: T0, limit: 1, leaseMs: 1000, leaseId: 'l' }),
        () => store.expireHeldDeliveries(T0, T0),
        () => store.listDeliveries('tenant_a', 'wh_x', { limit: 1 }),
        () => store.getDelivery('tenant_a', 'wh_x', 'dlv_x'),
        () => store.requeueDelivery('tenant_a', 'wh_x', 'dlv_x', ['failed'], T0),
        () => store.recoverFailedDeliveries('tenant_a', 'wh_x', T0, T0, T0, 1, T0),
      ];
      for (const attempt of attempts) {
        const error = await attempt().then(
          () => null,
          (caught: unknown) => caught,
        );
        expect(isKeyhookError(error) && error.code, String(error)).toBe('unavailable');
      }
      let called = false;
      store.watchDeliveries(() => {
        called = true;
      })();
      expect(called).toBe(false);
    });
  });
});
