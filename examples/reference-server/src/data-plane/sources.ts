import { randomUUID } from 'node:crypto';
import { CHUNK_ROWS, type StagingDb, type Tx, yieldToEventLoop } from './db.js';
import type { KeyedWrite } from './idempotency-keys.js';
import type { StagingJobHooks } from './jobs.js';
import type { ItemFields, ItemRecord, SourceRecord, WriteResult } from './model.js';
import {
  ITEM_SET_OF,
  type ItemRow,
  insertMany,
  itemSetOf,
  placeholders,
  ROWS_PER_STATEMENT,
  type SourceRow,
  toItem,
  toSource,
} from './rows.js';

export type ItemOperation =
  | { kind: 'upsert'; key: string; fields: ItemFields; contentHash: string }
  | { kind: 'delete'; key: string };

/**
 * A snapshot of more operations than this is written in chunks into an item set of its own and
 * made visible with one final update (data-plane.md §5.1); a smaller one, and
 * every other item write, is one transaction as before.
 */
export const CHUNKED_SNAPSHOT_MIN = 2 * CHUNK_ROWS;
/** A chunked snapshot's claim on its source not renewed for this long is taken as its writer's death. */
export const PENDING_STALE_MS = 30_000;
/** How long an item write waits before it looks again at a source a chunked snapshot is writing. */
export const BUSY_RETRY_MS = 20;

/** Why a source refused: it is not the tenant's, or it was deactivated. */
export type SourceRefusal = { outcome: 'source_not_found' } | { outcome: 'source_inactive' };

export interface ItemWrites {
  outcome: 'written';
  source: SourceRecord;
  /** One per operation, in order. */
  results: WriteResult[];
  /** Snapshot only: staged items that were not in it, now removed. */
  removed: number;
}

const SOURCE = 'SELECT * FROM staging_sources WHERE tenant_id = ? AND id = ?';
const ITEM_SELECT = `SELECT i.key, i.content_hash, i.created_at, i.updated_at, b.title, b.content, b.url, b.metadata
  FROM staging_items AS i JOIN staging_blobs AS b ON b.tenant_id = i.tenant_id AND b.hash = i.content_hash`;

/**
 * An item page's rows, stopped by size: first the keys with each item's stored bytes
 * (`octet_length` reads a value's length, not the value: SQLite from the record header, Postgres
 * from the TOAST pointer), then only the items whose predecessors' bytes stay within the budget,
 * with the first two always: the first is shown however large, and the last one read says a
 * next page exists. The stored bytes are at most the item's JSON, so every item the page's cut
 * (pageOf) can hold is read, and the one after them; that one's content and metadata are read
 * only when the budget could hold it too (`whole`), else it comes with '' and null, and the page
 * may not hold it. So a page reads the budget's worth of items, or its first when that is larger.
 * Parameters: tenant, source, after, limit, budget, tenant, budget.
 */
const ITEMS_WITHIN_BUDGET = `WITH page AS (
    SELECT i.key, i.content_hash, i.created_at, i.updated_at,
      octet_length(b.content) + COALESCE(octet_length(b.title), 0) + COALESCE(octet_length(b.url), 0)
        + COALESCE(octet_length(b.metadata), 0) AS size
    FROM staging_items AS i JOIN staging_blobs AS b ON b.tenant_id = i.tenant_id AND b.hash = i.content_hash
    WHERE i.tenant_id = ? AND i.source_id = ${ITEM_SET_OF} AND i.key > ? ORDER BY i.key LIMIT ?
  ), ranked AS (
    SELECT page.*, ROW_NUMBER() OVER (ORDER BY key) AS n,
      COALESCE(SUM(size) OVER (ORDER BY key ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS ahead
    FROM page
  ), placed AS (
    SELECT ranked.*, (n = 1 OR ahead + size <= ?) AS whole FROM ranked
  )
  SELECT p.key, p.content_hash, p.created_at, p.updated_at, p.whole, b.title, b.url,
    CASE WHEN p.whole THEN b.content ELSE '' END AS content,
    CASE WHEN p.whole THEN b.metadata END AS metadata
  FROM placed AS p JOIN staging_blobs AS b ON b.tenant_id = ? AND b.hash = p.content_hash
  WHERE p.n <= 2 OR p.ahead <= ? ORDER BY p.key`;

/**
 * The source row, locked for this transaction's writes (Postgres: FOR UPDATE; SQLite: the
 * write lock BEGIN IMMEDIATE already holds). Every item write and every run start takes it, so
 * they apply to one source one at a time and a run pins a settled item set.
 */
export async function lockSource(tx: Tx, db: StagingDb, tenantId: string, id: string) {
  const row = await lockSourceRow(tx, db, tenantId, id);
  return row ? toSource(row) : undefined;
}

/** lockSource's row as stored, with its item set and any chunked snapshot's claim. */
export function lockSourceRow(tx: Tx, db: StagingDb, tenantId: string, id: string) {
  return tx.get<SourceRow>(db.dialect === 'postgres' ? `${SOURCE} FOR UPDATE` : SOURCE, [tenantId, id]);
}

/** A chunked snapshot is writing the source, and its writer renewed its claim lately. */
export const pendingFresh = (row: SourceRow, now: number) =>
  row.pending_set !== null && Number(row.pending_at) > now - PENDING_STALE_MS;

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Busy = { outcome: 'busy' };

/** Sources and their staged items (data-plane.md §4.2). */
export class SourceStorage {
  constructor(
    private readonly db: StagingDb,
    private readonly hooks?: StagingJobHooks | undefined,
  ) {}

  /** With `keyed`, the request's Idempotency-Key and its answer commit with the source. */
  async create(source: SourceRecord, keyed?: KeyedWrite<void>): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.run(
        `INSERT INTO staging_sources (id, tenant_id, name, description, status, active_generation,
           staged_revision, applying_run_id, created_at, updated_at)
         VALUES (?, ?, ?, ?, 'active', 0, 0, NULL, ?, ?)`,
        [
          source.id,
          source.tenantId,
          source.name,
          source.description,
          source.createdAt.getTime(),
          source.updatedAt.getTime(),
        ],
      );
      await keyed?.settle(tx, undefined);
    });
  }

  async get(tenantId: string, id: string): Promise<SourceRecord | undefined> {
    const row = await this.db.read((tx) => tx.get<SourceRow>(SOURCE, [tenantId, id]));
    return row ? toSource(row) : undefined;
  }

  /** Newest first (ids are time-sortable); `before` is the last id of the previous page. */
  async list(tenantId: string, limit: number, before?: string): Promise<SourceRecord[]> {
    const rows = await this.db.read((tx) =>
      before === undefined
        ? tx.all<SourceRow>('SELECT * FROM staging_sources WHERE tenant_id = ? ORDER BY id DESC LIMIT ?', [
            tenantId,
            limit,
          ])
        : tx.all<SourceRow>(
            'SELECT * FROM staging_sources WHERE tenant_id = ? AND id < ? ORDER BY id DESC LIMIT ?',
            [tenantId, before, limit],
          ),
    );
    return rows.map(toSource);
  }

  /** Renames or redescribes; an inactive source may still be edited. */
  async update(
    tenantId: string,
    id: string,
    patch: { name?: string | undefined; description?: string | null | undefined },
    at: Date,
  ): Promise<SourceRecord | undefined> {
    const row = await this.db.transaction((tx) =>
      tx.get<SourceRow>(
        `UPDATE staging_sources SET
           name = CASE WHEN ? = 1 THEN ? ELSE name END,
           description = CASE WHEN ? = 1 THEN ? ELSE description END,
           updated_at = ?
         WHERE tenant_id = ? AND id = ? RETURNING *`,
        [
          patch.name === undefined ? 0 : 1,
          patch.name ?? null,
          patch.description === undefined ? 0 : 1,
          patch.description ?? null,
          at.getTime(),
          tenantId,
          id,
        ],
      ),
    );
    return row ? toSource(row) : undefined;
  }

  /** Deactivation is final and repeatable: a second call changes nothing and answers the source. */
  async deactivate(
    tenantId: string,
    id: string,
    at: Date,
    keyed?: KeyedWrite<SourceRecord | undefined>,
  ): Promise<SourceRecord | undefined> {
    return this.db.transaction(async (tx) => {
      await tx.run(
        `UPDATE staging_sources SET status = 'inactive', updated_at = ?
         WHERE tenant_id = ? AND id = ? AND status = 'active'`,
        [at.getTime(), tenantId, id],
      );
      const row = await tx.get<SourceRow>(SOURCE, [tenantId, id]);
      const source = row ? toSource(row) : undefined;
      await keyed?.settle(tx, source);
      return source;
    });
  }

  async getItem(tenantId: string, sourceId: string, key: string): Promise<ItemRecord | undefined> {
    const row = await this.db.read((tx) =>
      tx.get<ItemRow>(`${ITEM_SELECT} WHERE i.tenant_id = ? AND i.source_id = ${ITEM_SET_OF} AND i.key = ?`, [
        tenantId,
        sourceId,
        key,
      ]),
    );
    return row ? toItem(sourceId, row) : undefined;
  }

  /**
   * In key order; `after` is the last key of the previous page. At most `limit`, and read only as
   * far as `budget` bytes can reach (data-plane.md §3.3), never 100 items of 1 MiB: the first
   * `whole` items as stored, which a page may hold, and after them at most one read without its
   * content and metadata, which only says a next page exists.
   */
  async listItems(
    tenantId: string,
    sourceId: string,
    limit: number,
    budget: number,
    after?: string,
  ): Promise<{ items: ItemRecord[]; whole: number }> {
    const rows = await this.db.read((tx) =>
      tx.all<ItemRow & { whole: number | boolean }>(ITEMS_WITHIN_BUDGET, [
        tenantId,
        sourceId,
        after ?? '',
        limit,
        budget,
        tenantId,
        budget,
      ]),
    );
    const whole = rows.findIndex((row) => !row.whole);
    return { items: rows.map((row) => toItem(sourceId, row)), whole: whole === -1 ? rows.length : whole };
  }

  /**
   * Applies item operations in one transaction, in order (a later operation on a key sees the
   * earlier one). `snapshot`: the staged set becomes exactly the upserted keys. Any change moves
   * the source's staged revision by one. With `keyed` (a batch), the request's Idempotency-Key and
   * its answer commit in the same transaction.
   */
  async writeItems(
    tenantId: string,
    sourceId: string,
    operations: readonly ItemOperation[],
    options: { snapshot: boolean; at: Date; keyed?: KeyedWrite<SourceRefusal | ItemWrites> | undefined },
  ): Promise<SourceRefusal | ItemWrites> {
    const at = options.at.getTime();
    if (options.snapshot && operations.length > CHUNKED_SNAPSHOT_MIN) {
      return this.writeSnapshotInChunks(tenantId, sourceId, operations, at);
    }
    for (;;) {
      const outcome = await this.db.transaction(async (tx) => {
        await options.keyed?.check(tx);
        const written = await this.writeOnce(tx, tenantId, sourceId, operations, options.snapshot, at);
        if (written.outcome !== 'busy') await options.keyed?.settle(tx, written);
        return written;
      });
      if (outcome.outcome !== 'busy') return outcome;
      await sleep(BUSY_RETRY_MS); // a chunked snapshot holds the source: this write goes after it
    }
  }

  /** The work of writeItems' one transaction (every item write but a chunked snapshot). */
  private async writeOnce(
    tx: Tx,
    tenantId: string,
    sourceId: string,
    operations: readonly ItemOperation[],
    snapshot: boolean,
    at: number,
  ): Promise<SourceRefusal | ItemWrites | Busy> {
    const options = { snapshot };
    const row = await lockSourceRow(tx, this.db, tenantId, sourceId);
    if (!row) return { outcome: 'source_not_found' };
    const source = toSource(row);
    if (source.status !== 'active') return { outcome: 'source_inactive' };
    if (pendingFresh(row, Date.now())) return { outcome: 'busy' };
    if (row.pending_set !== null) {
      // A stale claim (its holder stopped renewing it): taken away under the row lock before
      // this write, so that its holder, should it still be alive, fails its next
      // compare-and-swap (a chunk, the flip, a run start's copy) instead of making visible a
      // set read before this write. What it wrote is unreachable now: the sweep drops it.
      await tx.run(
        'UPDATE staging_sources SET pending_set = NULL, pending_at = NULL WHERE id = ? AND pending_set = ?',
        [sourceId, row.pending_set],
      );
    }
    const set = itemSetOf(row);

    const staged = await stagedHashes(tx, tenantId, set, options.snapshot ? undefined : operations);
    const results: WriteResult[] = [];
    const upserts = new Map<string, Extract<ItemOperation, { kind: 'upsert' }>>();
    const deletes = new Set<string>();
    for (const operation of operations) {
      const current = staged.get(operation.key);
      if (operation.kind === 'delete') {
        results.push(current === undefined ? 'not_found' : 'deleted');
        if (current !== undefined) {
          staged.delete(operation.key);
          upserts.delete(operation.key);
          deletes.add(operation.key);
        }
        continue;
      }
      results.push(
        current === undefined ? 'created' : current === operation.contentHash ? 'unchanged' : 'updated',
      );
      if (current !== operation.contentHash) {
        staged.set(operation.key, operation.contentHash);
        upserts.set(operation.key, operation);
        deletes.delete(operation.key);
      }
    }
    let removed = 0;
    if (options.snapshot) {
      const kept = new Set(operations.map((operation) => operation.key));
      for (const key of staged.keys()) {
        if (!kept.has(key)) {
          deletes.add(key);
          removed++;
        }
      }
    }

    await insertMany(
      tx,
      'staging_blobs',
      ['tenant_id', 'hash', 'title', 'content', 'url', 'metadata'],
      [...upserts.values()].map(({ fields, contentHash }) => [
        tenantId,
        contentHash,
        fields.title,
        fields.content,
        fields.url,
        fields.metadata === null ? null : JSON.stringify(fields.metadata),
      ]),
      'ON CONFLICT (tenant_id, hash) DO NOTHING',
    );
    await insertMany(
      tx,
      'staging_items',
      ['tenant_id', 'source_id', 'key', 'content_hash', 'created_at', 'updated_at'],
      [...upserts.values()].map(({ key, contentHash }) => [tenantId, set, key, contentHash, at, at]),
      'ON CONFLICT (source_id, key) DO UPDATE SET content_hash = excluded.content_hash, updated_at = excluded.updated_at',
    );
    const gone = [...deletes];
    for (let start = 0; start < gone.length; start += ROWS_PER_STATEMENT) {
      const chunk = gone.slice(start, start + ROWS_PER_STATEMENT);
      await tx.run(
        `DELETE FROM staging_items WHERE tenant_id = ? AND source_id = ? AND key IN (${placeholders(chunk.length)})`,
        [tenantId, set, ...chunk],
      );
    }
    let written = source;
    if (upserts.size > 0 || deletes.size > 0) {
      const row = await tx.get<SourceRow>(
        `UPDATE staging_sources SET staged_revision = staged_revision + 1, updated_at = ?
         WHERE id = ? RETURNING *`,
        [at, sourceId],
      );
      written = toSource(row!);
    }
    return { outcome: 'written', source: written, results, removed };
  }

  /**
   * A large snapshot, without holding the event loop or the database for the whole of it
   * (data-plane.md §5.1). It claims the source (`pending_set`: other item writes wait meanwhile),
   * writes the complete new staged set under a set id of its own in short transactions of
   * CHUNK_ROWS items, yielding between them, and makes it visible with one final
   * transaction that points the source at it and moves the staged revision. Until then readers,
   * and runs that start, see the previous set whole; a failure or a crash before the flip leaves
   * it so, and the unfinished set's rows are dropped (by this call, or by the next snapshot
   * that takes over the dead claim). The old set's rows are dropped after the flip.
   */
  private async writeSnapshotInChunks(
    tenantId: string,
    sourceId: string,
    operations: readonly ItemOperation[],
    at: number,
  ): Promise<SourceRefusal | ItemWrites> {
    const set = `${sourceId}~${randomUUID()}`;
    type Claim = SourceRefusal | Busy | { outcome: 'claimed'; current: string; abandoned: string | null };
    let claim: Claim;
    for (;;) {
      claim = await this.db.transaction(async (tx): Promise<Claim> => {
        const row = await lockSourceRow(tx, this.db, tenantId, sourceId);
        if (!row) return { outcome: 'source_not_found' };
        if (row.status !== 'active') return { outcome: 'source_inactive' };
        if (pendingFresh(row, Date.now())) return { outcome: 'busy' };
        await tx.run('UPDATE staging_sources SET pending_set = ?, pending_at = ? WHERE id = ?', [
          set,
          Date.now(),
          sourceId,
        ]);
        return { outcome: 'claimed', current: itemSetOf(row), abandoned: row.pending_set };
      });
      if (claim.outcome !== 'busy') break;
      await sleep(BUSY_RETRY_MS);
    }
    if (claim.outcome !== 'claimed') return claim;
    const { current } = claim;

    let flipped: { source: SourceRow; changed: boolean } | SourceRefusal;
    const results: WriteResult[] = [];
    let removed = 0;
    const lost = () => new Error(`the snapshot of ${sourceId} lost its claim on the source`);
    // Renews the claim (in the caller's transaction), and stops the snapshot if another writer
    // took it over (ours went stale) or cleared it (an item write after it went stale).
    const renew = async (tx: Tx) => {
      const held = await tx.run(
        'UPDATE staging_sources SET pending_at = ? WHERE id = ? AND pending_set = ?',
        [Date.now(), sourceId, set],
      );
      if (held !== 1) throw lost();
    };
    try {
      // A writer that died with the claim left its unfinished set: nothing points at it now.
      if (claim.abandoned !== null) await dropUnusedSet(this.db, claim.abandoned, renew);

      // The set as it is (no other item write changes it while the claim holds), page by page,
      // the claim renewed before each page.
      const staged = new Map<string, { hash: string; createdAt: number; updatedAt: number }>();
      for (let after = ''; ; ) {
        await this.db.transaction(renew);
        const rows = await this.db.read((tx) =>
          tx.all<{ key: string; content_hash: string; created_at: number; updated_at: number }>(
            `SELECT key, content_hash, created_at, updated_at FROM staging_items
             WHERE tenant_id = ? AND source_id = ? AND key > ? ORDER BY key LIMIT ?`,
            [tenantId, current, after, CHUNK_ROWS * 5],
          ),
        );
        for (const row of rows) {
          staged.set(row.key, {
            hash: row.content_hash,
            createdAt: Number(row.created_at),
            updatedAt: Number(row.updated_at),
          });
        }
        if (rows.length < CHUNK_ROWS * 5) break;
        after = rows.at(-1)!.key;
        await yieldToEventLoop();
      }

      let changed = false;
      for (let start = 0; start < operations.length; start += CHUNK_ROWS) {
        await this.hooks?.beforeChunk?.({ work: 'snapshot', sourceId, chunk: start / CHUNK_ROWS });
        const chunk = operations.slice(start, start + CHUNK_ROWS) as Extract<
          ItemOperation,
          { kind: 'upsert' }
        >[];
        const blobs: (string | null)[][] = [];
        const items: (string | number)[][] = [];
        for (const operation of chunk) {
          const before = staged.get(operation.key);
          staged.delete(operation.key);
          const result =
            before === undefined
              ? 'created'
              : before.hash === operation.contentHash
                ? 'unchanged'
                : 'updated';
          results.push(result);
          if (result !== 'unchanged') {
            changed = true;
            const { fields } = operation;
            blobs.push([
              tenantId,
              operation.contentHash,
              fields.title,
              fields.content,
              fields.url,
              fields.metadata === null ? null : JSON.stringify(fields.metadata),
            ]);
          }
          items.push([
            tenantId,
            set,
            operation.key,
            operation.contentHash,
            before?.createdAt ?? at,
            result === 'unchanged' ? before!.updatedAt : at,
          ]);
        }
        await this.db.transaction(async (tx) => {
          await renew(tx);
          await insertMany(
            tx,
            'staging_blobs',
            ['tenant_id', 'hash', 'title', 'content', 'url', 'metadata'],
            blobs,
            'ON CONFLICT (tenant_id, hash) DO NOTHING',
          );
          await insertMany(
            tx,
            'staging_items',
            ['tenant_id', 'source_id', 'key', 'content_hash', 'created_at', 'updated_at'],
            items,
          );
        });
        await yieldToEventLoop();
      }
      removed = staged.size; // staged keys the snapshot does not name
      if (removed > 0) changed = true;

      // The flip: one transaction makes the whole new set visible, or nothing.
      flipped = await this.db.transaction(async (tx) => {
        const row = await lockSourceRow(tx, this.db, tenantId, sourceId);
        if (!row) return { outcome: 'source_not_found' } as const;
        if (row.pending_set !== set) throw lost();
        if (row.status !== 'active') {
          await tx.run('UPDATE staging_sources SET pending_set = NULL, pending_at = NULL WHERE id = ?', [
            sourceId,
          ]);
          return { outcome: 'source_inactive' } as const;
        }
        const source = changed
          ? await tx.get<SourceRow>(
              `UPDATE staging_sources SET items_set = ?, pending_set = NULL, pending_at = NULL,
                 staged_revision = staged_revision + 1, updated_at = ?
               WHERE id = ? RETURNING *`,
              [set, at, sourceId],
            )
          : await tx.get<SourceRow>(
              'UPDATE staging_sources SET pending_set = NULL, pending_at = NULL WHERE id = ? RETURNING *',
              [sourceId],
            );
        return { source: source!, changed };
      });
    } catch (error) {
      // Nothing was made visible: give the source back and drop what was written.
      await this.db
        .transaction((tx) =>
          tx.run(
            'UPDATE staging_sources SET pending_set = NULL, pending_at = NULL WHERE id = ? AND pending_set = ?',
            [sourceId, set],
          ),
        )
        .catch(() => {});
      await dropUnusedSet(this.db, set).catch(() => {});
      throw error;
    }
    if ('outcome' in flipped) {
      await dropUnusedSet(this.db, set).catch(() => {});
      return flipped;
    }
    // The set nobody sees any more. Its rows are invisible; a failure here leaves them so.
    await dropUnusedSet(this.db, flipped.changed ? current : set).catch(() => {});
    return { outcome: 'written', source: toSource(flipped.source), results, removed };
  }
}

/**
 * Deletes the rows of item set `set` if no source shows it or is writing it, a chunk per
 * transaction, yielding between them; true if it was unused. A set that is unused stays so: a
 * chunked snapshot's set is named by its claim from before its first row until the flip names
 * it, and nothing names a set again once it was replaced or abandoned.
 */
export async function dropUnusedSet(
  db: StagingDb,
  set: string,
  /** Runs first in each chunk's transaction (a snapshot renewing its claim); a throw stops the drop. */
  beforeChunk?: (tx: Tx) => Promise<void>,
): Promise<boolean> {
  const inUse = await db.read((tx) =>
    tx.get(
      `SELECT 1 AS used FROM staging_sources
       WHERE items_set = ? OR pending_set = ? OR (id = ? AND items_set IS NULL)`,
      [set, set, set],
    ),
  );
  if (inUse) return false;
  for (;;) {
    const deleted = await db.transaction(async (tx) => {
      await beforeChunk?.(tx);
      return tx.run(
        `DELETE FROM staging_items WHERE source_id = ? AND key IN
           (SELECT key FROM staging_items WHERE source_id = ? ORDER BY key LIMIT ?)`,
        [set, set, CHUNK_ROWS],
      );
    });
    if (deleted < CHUNK_ROWS) return true;
    await yieldToEventLoop();
  }
}

/** Item sets the orphan sweep looks at per call, at most. */
export const SET_SWEEP_STEP = 100;

/**
 * The sweep for item sets nobody points to (data-plane.md §5.7): a snapshot
 * whose clean-up of the replaced set failed, or whose process died after the flip, leaves that
 * set's rows unreachable. Each call walks the next SET_SWEEP_STEP set ids of staging_items
 * (one index seek each, from `after`, the cursor the previous call returned) and drops the rows
 * of those no source shows or is writing. Returns the cursor for the next call: '' once the walk
 * reached the end, so that the next call starts over.
 */
export async function sweepItemSets(
  db: StagingDb,
  after: string,
): Promise<{ next: string; dropped: number }> {
  let cursor = after;
  let dropped = 0;
  for (let step = 0; step < SET_SWEEP_STEP; step++) {
    const row = await db.read((tx) =>
      tx.get<{ item_set: string | null }>(
        'SELECT min(source_id) AS item_set FROM staging_items WHERE source_id > ?',
        [cursor],
      ),
    );
    if (!row || row.item_set === null) return { next: '', dropped };
    cursor = row.item_set;
    if (await dropUnusedSet(db, cursor)) dropped++;
    // Each step is a few short statements: requests go between them.
    await yieldToEventLoop();
  }
  return { next: cursor, dropped };
}

/** The staged hashes of the keys `operations` name, or of the whole source (a snapshot). */
async function stagedHashes(
  tx: Tx,
  tenantId: string,
  sourceId: string,
  operations: readonly ItemOperation[] | undefined,
): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  const select = 'SELECT key, content_hash FROM staging_items WHERE tenant_id = ? AND source_id = ?';
  if (operations === undefined) {
    for (const row of await tx.all<{ key: string; content_hash: string }>(select, [tenantId, sourceId])) {
      hashes.set(row.key, row.content_hash);
    }
    return hashes;
  }
  const keys = [...new Set(operations.map((operation) => operation.key))];
  for (let start = 0; start < keys.length; start += ROWS_PER_STATEMENT) {
    const chunk = keys.slice(start, start + ROWS_PER_STATEMENT);
    const rows = await tx.all<{ key: string; content_hash: string }>(
      `${select} AND key IN (${placeholders(chunk.length)})`,
      [tenantId, sourceId, ...chunk],
    );
    for (const row of rows) hashes.set(row.key, row.content_hash);
  }
  return hashes;
}
