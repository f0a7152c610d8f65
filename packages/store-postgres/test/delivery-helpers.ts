import { newId } from '@keyhook/core/http';
import { type AttemptCompletion, DELIVERY_RULES, type EventRecord } from '@keyhook/core/store';
import { T0 } from '@keyhook/store-conformance';
import { POSTGRES_TEST_URL, uniqueSchemaName } from '@keyhook/testing/postgres';
import pg from 'pg';
import { expect } from 'vitest';
import { KEY_CHANGE_CHANNEL } from '../src/change-feed.js';
import { createPostgresStore, type PostgresStore } from '../src/index.js';

export const deliveryId = () => newId('dlv');

/** Publishes `events` events of eventRecord() one by one, then leases up to `limit` due deliveries at T0 under `leaseId`. */
export async function publishThenLease(store: PostgresStore, events: number, limit: number, leaseId: string) {
  for (let i = 0; i < events; i++) await store.publishEvent(eventRecord(), deliveryId);
  return store.leaseDeliveries({ now: T0, limit, leaseMs: 60_000, leaseId });
}

/** An event as core would write it, of tenant_a and type run.completed, created at T0. */
export function eventRecord(overrides: Partial<EventRecord> = {}): EventRecord {
  const id = overrides.id ?? newId('evt');
  return {
    id,
    tenantId: 'tenant_a',
    type: 'run.completed',
    payload: JSON.stringify({
      id,
      type: 'run.completed',
      createdAt: T0.toISOString(),
      data: { runId: 'r1' },
    }),
    createdAt: T0,
    traceContext: null,
    ...overrides,
  };
}

/** Stores on fresh schemas, read and dropped through `admin`. */
export class Schemas {
  private readonly names: string[] = [];

  constructor(private readonly admin: pg.Pool) {}

  /** A new name, dropped by `dropAll`. */
  fresh(label: string): string {
    const schema = uniqueSchemaName(label);
    this.names.push(schema);
    return schema;
  }

  /**
   * A store on a fresh schema, with an `orders` table standing for the caller's own data.
   * `verifiedKeyCache` makes it listen from its creation, for `caughtUp`.
   */
  async open(label: string, poolSize = 4, { verifiedKeyCache = false } = {}): Promise<PostgresStore> {
    const schema = this.fresh(label);
    const store = await createPostgresStore({
      connectionString: POSTGRES_TEST_URL,
      schema,
      poolSize,
      verifiedKeyCache,
    });
    await this.admin.query(`CREATE TABLE "${schema}".orders (id text PRIMARY KEY)`);
    return store;
  }

  /** Another app instance on the same schema: its own pool, its own LISTEN connection. */
  peerOf(store: PostgresStore, { verifiedKeyCache = false } = {}): Promise<PostgresStore> {
    return createPostgresStore({
      connectionString: POSTGRES_TEST_URL,
      schema: store.schema,
      poolSize: 2,
      verifiedKeyCache,
    });
  }

  /**
   * Subscribes to the store's delivery wake-ups and resolves once its LISTEN connection is up and
   * has heard what was committed before: on a store with the verified-key cache (listening since
   * its creation), once it caught up; else at the first call, which every new connection makes.
   * `calls()` counts the calls after that.
   */
  async watch(store: PostgresStore) {
    let calls = 0;
    const listening = store.keyChangeVersion() !== null;
    const stop = store.watchDeliveries(() => calls++);
    if (listening) await this.caughtUp(store);
    else await expect.poll(() => calls, { timeout: 5000, interval: 5 }).toBeGreaterThan(0);
    const base = calls;
    return { calls: () => calls - base, stop };
  }

  /**
   * Resolves once `store` has heard every notification committed before this call, so a wake-up
   * it has not had by then was never sent. A listening connection gets notifications in commit
   * order: a key-change notification for its schema, sent now, moves its key-change version only
   * after the earlier ones reached its listeners. Needs a store with the verified-key cache.
   */
  async caughtUp(store: PostgresStore): Promise<void> {
    const before = store.keyChangeVersion();
    if (before === null) throw new Error('caughtUp: open the store with verifiedKeyCache');
    await this.admin.query('SELECT pg_notify($1, $2)', [KEY_CHANGE_CHANNEL, `${store.schema}:caught-up`]);
    await expect.poll(() => store.keyChangeVersion(), { timeout: 5000, interval: 2 }).not.toBe(before);
  }

  async count(schema: string, table: string): Promise<number> {
    const { rows } = await this.admin.query(`SELECT count(*)::int AS n FROM "${schema}".${table}`);
    return rows[0].n;
  }

  /** How many statements on the schema's keyhook tables wait for a row lock. */
  async lockWaiters(schema: string): Promise<number> {
    const { rows } = await this.admin.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1`,
      [`%"${schema}".keyhook_%`],
    );
    return rows[0].n;
  }

  async dropAll(): Promise<void> {
    for (const schema of this.names.splice(0)) {
      await this.admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  }
}

/** A first attempt that got 200, as the worker records it under `leaseId`. */
export function success(delivery: { id: string; tenantId: string }, leaseId: string): AttemptCompletion {
  return {
    tenantId: delivery.tenantId,
    deliveryId: delivery.id,
    leaseId,
    attempt: {
      deliveryId: delivery.id,
      tenantId: delivery.tenantId,
      attempt: 1,
      startedAt: T0,
      durationMs: 5,
      statusCode: 200,
      error: null,
      responseBody: 'ok',
    },
    status: 'succeeded',
    dueAt: null,
    endpointFailures: 'reset',
    autoDisable: DELIVERY_RULES.autoDisable,
    at: T0,
  };
}

/** A query as it went to a pg.Pool: its text, and its name when it was sent as a prepared statement. */
export interface SentQuery {
  text: string;
  name?: string | undefined;
}

/**
 * Records every query sent through any pg.Pool from now until `stop()` (which may be called more
 * than once), by wrapping `pg.Pool.prototype.query`.
 */
export function recordPoolQueries(): { sent: SentQuery[]; stop: () => void } {
  const sent: SentQuery[] = [];
  const query = pg.Pool.prototype.query;
  pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
    const config = args[0] as string | { text: string; name?: string };
    sent.push(typeof config === 'string' ? { text: config } : { text: config.text, name: config.name });
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return {
    sent,
    stop: () => {
      pg.Pool.prototype.query = query;
    },
  };
}
