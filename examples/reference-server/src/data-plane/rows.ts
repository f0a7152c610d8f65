import type { Tx } from './db.js';
import type {
  ChangeRecord,
  GenerationRecord,
  ItemRecord,
  RunRecord,
  RunStatus,
  SourceRecord,
  SourceStatus,
} from './model.js';

export interface SourceRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  status: SourceStatus;
  active_generation: number;
  staged_revision: number;
  applying_run_id: string | null;
  created_at: number;
  updated_at: number;
  /** The visible staged set's id (migration 0002); null: the source's own id. */
  items_set: string | null;
  /** The set a chunked snapshot is writing, and when it last wrote a chunk. */
  pending_set: string | null;
  pending_at: number | null;
}

/** The id the source's visible staged items carry in staging_items.source_id. */
export const itemSetOf = (row: Pick<SourceRow, 'id' | 'items_set'>): string => row.items_set ?? row.id;

/** SQL for the visible item set of the source whose id is the next parameter. */
export const ITEM_SET_OF = '(SELECT COALESCE(items_set, id) FROM staging_sources WHERE id = ?)';

export function toSource(row: SourceRow): SourceRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    description: row.description,
    status: row.status,
    activeGeneration: Number(row.active_generation),
    stagedRevision: Number(row.staged_revision),
    applyingRunId: row.applying_run_id,
    createdAt: new Date(Number(row.created_at)),
    updatedAt: new Date(Number(row.updated_at)),
  };
}

export interface ItemRow {
  key: string;
  content_hash: string;
  title: string | null;
  content: string;
  url: string | null;
  metadata: string | null;
  created_at: number;
  updated_at: number;
}

export function toItem(sourceId: string, row: ItemRow): ItemRecord {
  return {
    sourceId,
    key: row.key,
    contentHash: row.content_hash,
    title: row.title,
    content: row.content,
    url: row.url,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    createdAt: new Date(Number(row.created_at)),
    updatedAt: new Date(Number(row.updated_at)),
  };
}

export interface RunRow {
  id: string;
  tenant_id: string;
  source_id: string;
  status: RunStatus;
  base_generation: number;
  staged_revision: number;
  added: number | null;
  updated: number | null;
  removed: number | null;
  unchanged: number | null;
  noop: number | null;
  generation: number | null;
  reason: string | null;
  claimed_at: number | null;
  created_at: number;
  updated_at: number;
}

export function toRun(row: RunRow): RunRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    sourceId: row.source_id,
    status: row.status,
    baseGeneration: Number(row.base_generation),
    stagedRevision: Number(row.staged_revision),
    counts:
      row.added === null
        ? null
        : {
            added: Number(row.added),
            updated: Number(row.updated),
            removed: Number(row.removed),
            unchanged: Number(row.unchanged),
          },
    noop: row.noop === null ? null : Number(row.noop) === 1,
    generation: row.generation === null ? null : Number(row.generation),
    reason: row.reason,
    createdAt: new Date(Number(row.created_at)),
    updatedAt: new Date(Number(row.updated_at)),
  };
}

export interface ChangeRow {
  key: string;
  change: ChangeRecord['change'];
  content_hash: string | null;
  previous_hash: string | null;
}

export const toChange = (row: ChangeRow): ChangeRecord => ({
  key: row.key,
  change: row.change,
  contentHash: row.content_hash,
  previousHash: row.previous_hash,
});

export interface GenerationRow {
  source_id: string;
  number: number;
  run_id: string;
  item_count: number;
  passage_count: number;
  created_at: number;
}

export const toGeneration = (row: GenerationRow): GenerationRecord => ({
  sourceId: row.source_id,
  number: Number(row.number),
  runId: row.run_id,
  itemCount: Number(row.item_count),
  passageCount: Number(row.passage_count),
  createdAt: new Date(Number(row.created_at)),
});

/** Rows per multi-row statement: well under both engines' parameter limits. */
export const ROWS_PER_STATEMENT = 200;

/** `INSERT INTO table (columns) VALUES (…), (…) <suffix>` for many rows, in chunks. */
export async function insertMany(
  tx: Tx,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly (string | number | null)[])[],
  suffix = '',
): Promise<void> {
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(start, start + ROWS_PER_STATEMENT);
    await tx.run(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${chunk.map(() => tuple).join(', ')} ${suffix}`,
      chunk.flat(),
    );
  }
}

/** `?, ?, …` for an IN list. */
export const placeholders = (count: number) => Array.from({ length: count }, () => '?').join(', ');
