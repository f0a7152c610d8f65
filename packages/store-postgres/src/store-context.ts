import { consoleLogger, type Logger } from '@keyhook/core/store';
import type pg from 'pg';
import { type Answer, type Cells, cellsOf } from './answer.js';
import { DEFAULT_STATEMENT_TIMEOUT_MS, StatementBounds } from './bounds.js';
import type { KeyChangeFeed } from './change-feed.js';
import { withTransaction } from './checkout.js';
import type { Queryable, StatementResult } from './host-transaction.js';
import { statements as publishStatements } from './operations/publish-event.js';
import type { PostgresStoreParts } from './postgres-store.js';
import { PreparedStatements } from './prepared.js';
import { PublishFunction } from './publish-function.js';
import { assertSchemaName } from './schema-name.js';
import { type Statements, type Tables, tablesIn } from './statements.js';
import { toStoreError, unavailable } from './unavailable.js';
import { WebhookCache } from './webhook-cache.js';
import { type WriteQueue, writeQueue } from './write-queue.js';

/**
 * What every operation of the store (src/operations/) runs with: its pool and tables, its
 * statements, how it sends one or runs a transaction, and what it keeps between calls.
 */
export class StoreContext {
  readonly schema: string;
  readonly tables: Tables;
  readonly pool: pg.Pool;
  readonly logger: Logger;
  /** Started, listening on one of the pool's connections. */
  readonly feed: KeyChangeFeed;
  readonly bounds: StatementBounds;
  readonly prepared: PreparedStatements;
  /** publishEvent's one call through a data layer that cannot prepare a statement (Prisma). */
  readonly publishFunction: PublishFunction;
  /**
   * Publishes and successes wait here while one statement of them is in flight, and go together
   * next (src/write-queue.ts).
   */
  readonly writes: WriteQueue;
  /** Set by close(): every statement after it fails as unavailable. */
  closed = false;
  /** Key changes this store made and heard announced (operations/key-change-version.ts). */
  localChanges = 0;
  /**
   * Whether this store's last pacing claim met an endpoint with a rate: its next claim is then
   * the pacing claim alone, since a limited endpoint's backlog comes due at every slot and the
   * plain claim first would add a round trip to each (docs/decisions.md §8.18).
   */
  pacing = false;
  /** Rows purged since the last VACUUM of the purged tables (operations/purge-finished-deliveries.ts). */
  purgedSinceVacuum = 0;
  /** Tenant-and-type subscriber counts that size publishes' delivery ids (operations/publish-event.ts). */
  readonly subscriberHints = new Map<string, number>();
  /** The endpoints of the deliveries this store leases, by id and version (src/webhook-cache.ts). */
  readonly webhooks = new WebhookCache();
  private readonly built = new Map<Statements<unknown>, unknown>();

  constructor(parts: PostgresStoreParts) {
    this.feed = parts.feed;
    this.logger = parts.logger ?? consoleLogger;
    this.schema = assertSchemaName(parts.schema);
    this.pool = parts.pool;
    this.bounds = new StatementBounds(
      parts.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS,
      parts.ownsPool,
    );
    this.tables = tablesIn(this.schema);
    this.prepared = new PreparedStatements(parts.preparedStatements ?? true, this.bounds);
    this.publishFunction = new PublishFunction(
      this.pool,
      this.schema,
      this.sql(publishStatements).publishOneText,
      this.logger,
    );
    this.writes = writeQueue(this);
  }

  /**
   * `build`'s statements for this store's tables, built on first use and kept: every call gets
   * the same texts, which is what a prepared statement's name is made from (src/prepared.ts).
   */
  sql<T>(build: Statements<T>): T {
    if (!this.built.has(build)) {
      this.built.set(
        build,
        build(this.tables, (text) => this.prepared.add(text)),
      );
    }
    return this.built.get(build) as T;
  }

  /** One statement on the pool, outside any transaction. */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    if (this.closed) throw unavailable('The store is closed.');
    try {
      return await this.pool.query<R>(this.prepared.config(text, values));
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /** `query`, its rows read by position (src/answer.ts). */
  async queryCells(text: string, values: unknown[]): Promise<Cells[]> {
    if (this.closed) throw unavailable('The store is closed.');
    try {
      return await this.byPosition(text, values);
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /**
   * `run` for a statement whose rows are read by position (src/answer.ts): as arrays on the
   * store's pool; on a caller's client, whose data layer answers with objects, by `answer`'s names.
   */
  async cells(client: Queryable, text: string, values: unknown[], answer: Answer<string>): Promise<Cells[]> {
    if (client === (this.pool as unknown)) return this.byPosition(text, values);
    return cellsOf((await this.run(client, text, values)).rows, answer);
  }

  private async byPosition(text: string, values: unknown[]): Promise<Cells[]> {
    const config = this.prepared.config(text, values, false, true) as pg.QueryArrayConfig;
    return (await this.pool.query(config)).rows;
  }

  /**
   * Runs `work` in one READ COMMITTED transaction on one pool client (explicitly, so a pool whose
   * default isolation is stricter does not change what a re-read after a lock wait sees). Any
   * error rolls back, and goes out through the unavailable mapping.
   */
  async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen();
    try {
      return await withTransaction(this.pool, work, {
        begin: 'BEGIN ISOLATION LEVEL READ COMMITTED',
        readTimeout: this.bounds.readTimeout(false),
      });
    } catch (error) {
      throw toStoreError(error);
    }
  }

  /** A statement on a transaction's (or a caller's) client, named when it is a prepared one. */
  run<R extends pg.QueryResultRow = pg.QueryResultRow>(
    client: Queryable,
    text: string,
    values: unknown[],
    bulk = false,
  ): Promise<StatementResult<R>> {
    return client.query<R>(this.prepared.config(text, values, bulk));
  }

  /**
   * The rest of this transaction (on the store's pool) may take the bulk bound (src/bounds.ts):
   * its next statements' work grows with a queue or an endpoint's history.
   */
  async allowBulk(client: Queryable): Promise<void> {
    const ms = this.bounds.bulkServerMs();
    if (ms !== null) await client.query(`SET LOCAL statement_timeout = ${ms}`);
  }

  assertOpen(): void {
    if (this.closed) throw unavailable('The store is closed.');
  }
}
