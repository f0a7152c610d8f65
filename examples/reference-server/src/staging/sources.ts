import type { StagingDb, Tx } from './db.js';
import type { ItemFields, ItemRecord, SourceRecord, WriteResult } from './model.js';
import {
  type ItemRow,
  insertMany,
  placeholders,
  ROWS_PER_STATEMENT,
  type SourceRow,
  toItem,
  toSource,
} from './rows.js';

export type ItemOperation =
  | { kind: 'upsert'; key: string; fields: ItemFields; contentHash: string }
  | { kind: 'delete'; key: string };

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
 * The source row, locked for this transaction's writes (Postgres: FOR UPDATE; SQLite: the
 * write lock BEGIN IMMEDIATE already holds). Every item write and every run start takes it, so
 * they apply to one source one at a time and a run pins a settled item set.
 */
export async function lockSource(tx: Tx, db: StagingDb, tenantId: string, id: string) {
  const row = await tx.get<SourceRow>(db.dialect === 'postgres' ? `${SOURCE} FOR UPDATE` : SOURCE, [
    tenantId,
    id,
  ]);
  return row ? toSource(row) : undefined;
}

/** Sources and their staged items (DESIGN.md §7 "Sources", "Items"). */
export class SourceStorage {
  constructor(private readonly db: StagingDb) {}

  async create(source: SourceRecord): Promise<void> {
    await this.db.transaction((tx) =>
      tx.run(
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
      ),
    );
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
  async deactivate(tenantId: string, id: string, at: Date): Promise<SourceRecord | undefined> {
    const row = await this.db.transaction(async (tx) => {
      await tx.run(
        `UPDATE staging_sources SET status = 'inactive', updated_at = ?
         WHERE tenant_id = ? AND id = ? AND status = 'active'`,
        [at.getTime(), tenantId, id],
      );
      return tx.get<SourceRow>(SOURCE, [tenantId, id]);
    });
    return row ? toSource(row) : undefined;
  }

  async getItem(tenantId: string, sourceId: string, key: string): Promise<ItemRecord | undefined> {
    const row = await this.db.read((tx) =>
      tx.get<ItemRow>(`${ITEM_SELECT} WHERE i.tenant_id = ? AND i.source_id = ? AND i.key = ?`, [
        tenantId,
        sourceId,
        key,
      ]),
    );
    return row ? toItem(sourceId, row) : undefined;
  }

  /** In key order; `after` is the last key of the previous page. */
  async listItems(tenantId: string, sourceId: string, limit: number, after?: string): Promise<ItemRecord[]> {
    const rows = await this.db.read((tx) =>
      tx.all<ItemRow>(
        `${ITEM_SELECT} WHERE i.tenant_id = ? AND i.source_id = ? AND i.key > ? ORDER BY i.key LIMIT ?`,
        [tenantId, sourceId, after ?? '', limit],
      ),
    );
    return rows.map((row) => toItem(sourceId, row));
  }

  /**
   * Applies item operations in one transaction, in order (a later operation on a key sees the
   * earlier one). `snapshot`: the staged set becomes exactly the upserted keys. Any change moves
   * the source's staged revision by one.
   */
  async writeItems(
    tenantId: string,
    sourceId: string,
    operations: readonly ItemOperation[],
    options: { snapshot: boolean; at: Date },
  ): Promise<SourceRefusal | ItemWrites> {
    const at = options.at.getTime();
    return this.db.transaction(async (tx): Promise<SourceRefusal | ItemWrites> => {
      const source = await lockSource(tx, this.db, tenantId, sourceId);
      if (!source) return { outcome: 'source_not_found' };
      if (source.status !== 'active') return { outcome: 'source_inactive' };

      const staged = await stagedHashes(tx, tenantId, sourceId, options.snapshot ? undefined : operations);
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
        [...upserts.values()].map(({ key, contentHash }) => [tenantId, sourceId, key, contentHash, at, at]),
        'ON CONFLICT (source_id, key) DO UPDATE SET content_hash = excluded.content_hash, updated_at = excluded.updated_at',
      );
      const gone = [...deletes];
      for (let start = 0; start < gone.length; start += ROWS_PER_STATEMENT) {
        const chunk = gone.slice(start, start + ROWS_PER_STATEMENT);
        await tx.run(
          `DELETE FROM staging_items WHERE tenant_id = ? AND source_id = ? AND key IN (${placeholders(chunk.length)})`,
          [tenantId, sourceId, ...chunk],
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
    });
  }
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
