import { createKeyhook, type Keyhook, silentLogger } from '@keyhook/core';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, waitUntil } from '@keyhook/testing/support';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { checkOut } from '../src/checkout.js';
import type { PostgresStore } from '../src/index.js';
import { feedQuery, statements as feedStatements } from '../src/operations/list-feed-events.js';
import { statementsIn } from '../src/statements.js';
import { Schemas } from './delivery-helpers.js';

const available = await postgresAvailable();

const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 2 });
/** The application's pool, in which its publishers open their own transactions. */
const app = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 10 });
const schemas = new Schemas(admin);

const EVENTS = 10_000;
const PUBLISHERS = 8;
const PAGE = 100;

const events = { 'order.placed': {} };

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of the plan EXPLAIN gives for `sql`. */
async function planNodes(sql: string, params: unknown[]): Promise<PlanNode[]> {
  const { rows } = await admin.query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const nodes: PlanNode[] = [];
  const walk = (node: PlanNode) => {
    nodes.push(node);
    for (const child of node.Plans ?? []) walk(child);
  };
  walk(rows[0]['QUERY PLAN'][0].Plan);
  return nodes;
}

function keyhookOn(store: PostgresStore) {
  return createKeyhook({
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    eventCatalog: events,
  });
}

/** A pause of 0–9 ms: long enough that transactions overtake each other, and commit out of order. */
const pause = () => new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 10)));

/** One page of GET /events, as a receiver's HTTP client gets it. */
async function page(keyhook: Keyhook, secret: string, after: string | undefined) {
  const query = new URLSearchParams({ limit: String(PAGE) });
  if (after !== undefined) query.set('after', after);
  const response = await keyhook.handle({
    method: 'GET',
    path: '/events',
    query: query.toString(),
    headers: { authorization: `Bearer ${secret}` },
    rawBody: null,
  });
  if (response.status !== 200) throw new Error(`GET /events answered ${response.status}: ${response.body}`);
  return JSON.parse(response.body!) as { data: { id: string }[]; hasMore: boolean };
}

/**
 * Pages after `after` until they hold `ids`, each read a prefix of them. The feed's horizon is the
 * cluster's (docs/decisions.md §8.17): a transaction that another client of the same Postgres
 * holds open (another test file, another program) holds these events back too, for a while.
 */
async function pageUntil(keyhook: Keyhook, secret: string, after: string | undefined, ids: string[]) {
  let last = await page(keyhook, secret, after);
  await waitUntil(
    async () => {
      last = await page(keyhook, secret, after);
      const read = last.data.map((event) => event.id);
      expect(read).toEqual(ids.slice(0, read.length));
      return read.length === ids.length;
    },
    10_000,
    () => `the feed after ${after ?? 'the start'} held ${last.data.length} of ${ids.length} events`,
  );
  return last;
}

(available ? describe : describe.skip)('PostgresStore events feed (docs/decisions.md §8.17)', () => {
  afterAll(async () => {
    await schemas.dropAll();
    await admin.end();
    await app.end();
  });

  it(`pages ${EVENTS} events published in host transactions committing out of order: 0 missed, 0 repeated`, async () => {
    const store = await schemas.open('feedorder', 6);
    const keyhook = keyhookOn(store);
    const { secret } = await keyhook.keys.create('tenant_a', { name: 'feed', scopes: ['events:read'] });
    const committedAt = new Map<string, number>();
    let published = 0;
    let publishing = true;

    // Each publisher: BEGIN, a write of the host's own (the transaction takes its id now), a pause,
    // one to three events (their sequence numbers are taken now), a pause, COMMIT.
    const publisher = async () => {
      const client = await checkOut(app);
      try {
        while (published < EVENTS) {
          await client.query('BEGIN');
          await client.query(`INSERT INTO "${store.schema}".orders (id) VALUES (gen_random_uuid()::text)`);
          await pause();
          const ids: string[] = [];
          const count = Math.min(1 + Math.floor(Math.random() * 3), EVENTS - published);
          published += count;
          for (let i = 0; i < count; i++) {
            const { event } = await keyhook.events.publish(
              { tenantId: 'tenant_a', type: 'order.placed', data: { n: i } },
              { transaction: client },
            );
            ids.push(event.id);
          }
          await pause();
          await client.query('COMMIT');
          const now = performance.now();
          for (const id of ids) committedAt.set(id, now);
        }
      } finally {
        client.release();
      }
    };

    // A naive reader beside it, ordering by sequence number alone with no horizon: what the feed
    // would be without the xid rule. It is meant to miss events; if it misses none, the publishers
    // did not commit out of order and the test proves nothing.
    const naiveSeen = new Set<string>();
    const naive = async () => {
      let last = 0;
      while (publishing) {
        const { rows } = await admin.query<{ id: string; feed_seq: string }>(
          `SELECT id, feed_seq FROM "${store.schema}".keyhook_events
            WHERE tenant_id = 'tenant_a' AND feed_seq > $1 ORDER BY feed_seq LIMIT ${PAGE}`,
          [last],
        );
        for (const row of rows) naiveSeen.add(row.id);
        if (rows.length > 0) last = Number(rows[rows.length - 1]!.feed_seq);
        else await new Promise((resolve) => setImmediate(resolve));
      }
    };

    const seen: string[] = [];
    let pages = 0;
    const seenAt = new Map<string, number>();
    const reader = async () => {
      let after: string | undefined;
      for (;;) {
        const done = !publishing;
        const answer = await page(keyhook, secret, after);
        pages++;
        const now = performance.now();
        for (const { id } of answer.data) {
          seen.push(id);
          seenAt.set(id, now);
        }
        if (answer.data.length > 0) after = answer.data[answer.data.length - 1]!.id;
        if (done && !answer.hasMore) return;
        if (answer.data.length === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    };

    const started = performance.now();
    const readers = [reader(), naive()];
    await Promise.all(Array.from({ length: PUBLISHERS }, publisher));
    publishing = false;
    await Promise.all(readers);
    const seconds = (performance.now() - started) / 1000;

    const unique = new Set(seen);
    const missed = [...committedAt.keys()].filter((id) => !unique.has(id)).length;
    const repeated = seen.length - unique.size;
    // The lag: from the publisher's COMMIT returning to the reader's page holding the event (an
    // event can be read before its COMMIT's answer reaches the publisher: no lag, not a negative one).
    const maxLagMs = Math.max(
      0,
      ...[...committedAt].map(([id, committed]) => (seenAt.get(id) ?? Number.POSITIVE_INFINITY) - committed),
    );
    const naiveMissed = [...committedAt.keys()].filter((id) => !naiveSeen.has(id)).length;
    console.log(
      `events feed on Postgres: ${committedAt.size} events by ${PUBLISHERS} publishers in ${seconds.toFixed(1)} s; ` +
        `${pages} pages; missed ${missed}, repeated ${repeated}; max lag ${maxLagMs.toFixed(1)} ms from COMMIT to read; ` +
        `by sequence number alone: missed ${naiveMissed}`,
    );
    expect(committedAt.size).toBe(EVENTS);
    expect(missed).toBe(0);
    expect(repeated).toBe(0);
    expect(seen).toHaveLength(EVENTS);
    expect(naiveMissed).toBeGreaterThan(0);
    await keyhook.close();
    await store.close();
  }, 180_000);

  it('reads a page tenant-first on the feed indexes, in each of its four forms', async () => {
    const store = await schemas.open('feedplan');
    try {
      // 20 tenants of 1,000 events each, two types, written straight to the table.
      await admin.query(
        `INSERT INTO "${store.schema}".keyhook_events (tenant_id, id, type, payload, created_at)
          SELECT 'tenant_' || (g % 20), 'evt_' || g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, '{}',
            now() - interval '1 day' + g * interval '1 ms'
          FROM generate_series(1, 20000) AS g`,
      );
      await admin.query(`ANALYZE "${store.schema}".keyhook_events`);
      const statements = statementsIn(store.schema, feedStatements);
      const since = new Date(Date.now() - 2 * 86_400_000);
      for (const [after, type, index] of [
        [undefined, undefined, 'keyhook_events_feed_idx'],
        [undefined, 'a', 'keyhook_events_feed_type_idx'],
        ['evt_40', undefined, 'keyhook_events_feed_idx'],
        ['evt_40', 'a', 'keyhook_events_feed_type_idx'],
      ] as const) {
        const { text, values } = feedQuery(statements, 'tenant_0', {
          after,
          type,
          limit: 21,
          createdSince: since,
        });
        const nodes = await planNodes(text, values);
        const onEvents = nodes.filter((node) => node['Relation Name'] === 'keyhook_events');
        expect(
          onEvents.map((node) => node['Node Type']),
          `${after} ${type}`,
        ).not.toContain('Seq Scan');
        expect(onEvents.map((node) => node['Index Name'])).toContain(index);
      }
    } finally {
      await store.close();
    }
  });

  it('an open transaction holds the feed back, its own events and later ones; after COMMIT it catches up in order', async () => {
    const store = await schemas.open('feedheld');
    const keyhook = keyhookOn(store);
    const { secret } = await keyhook.keys.create('tenant_a', { name: 'feed', scopes: ['events:read'] });
    const client = await checkOut(app);
    try {
      const before = await keyhook.events.publish({ tenantId: 'tenant_a', type: 'order.placed', data: {} });
      await client.query('BEGIN');
      await client.query(`INSERT INTO "${store.schema}".orders (id) VALUES ('order_1')`);
      const held = await keyhook.events.publish(
        { tenantId: 'tenant_a', type: 'order.placed', data: { held: true } },
        { transaction: client },
      );
      // Committed, but written after the open transaction began: it waits behind it.
      const later = await keyhook.events.publish({ tenantId: 'tenant_a', type: 'order.placed', data: {} });
      const whileOpen = await pageUntil(keyhook, secret, undefined, [before.event.id]);
      expect(whileOpen.hasMore).toBe(false);
      expect((await page(keyhook, secret, before.event.id)).data).toEqual([]);
      await client.query('COMMIT');
      await pageUntil(keyhook, secret, before.event.id, [held.event.id, later.event.id]);
    } finally {
      await client.query('ROLLBACK').catch(() => {});
      client.release();
      await keyhook.close();
      await store.close();
    }
  });
});
