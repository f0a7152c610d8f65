/**
 * The reference data plane's records (data-plane.md §4.2): what a tenant stages in a source,
 * the runs that discover what changed, and the generations an apply publishes. Ids are keyhook's
 * shape (`src_…`, `run_…`); timestamps are Dates here and ISO strings on the wire.
 */

export type SourceStatus = 'active' | 'inactive';

export interface SourceRecord {
  id: string;
  tenantId: string;
  name: string;
  description: string | null;
  status: SourceStatus;
  /** The generation readers see; 0 before the first apply. */
  activeGeneration: number;
  /** Moves with every item write that changed something; a run pins the value it started at. */
  stagedRevision: number;
  /** The run whose apply is in flight, if any: at most one per source. */
  applyingRunId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** An item's fields as the caller sends them (data-plane.md §4.2: keyed by the caller's `key`). */
export interface ItemFields {
  title: string | null;
  content: string;
  url: string | null;
  metadata: Record<string, unknown> | null;
}

export interface ItemRecord extends ItemFields {
  sourceId: string;
  key: string;
  /** SHA-256 of the canonical fields: it decides `unchanged`. */
  contentHash: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What an item write did. */
export type WriteResult = 'created' | 'updated' | 'unchanged' | 'deleted' | 'not_found';

export type RunStatus =
  | 'queued'
  | 'running'
  | 'completed'
  | 'failed'
  | 'conflict'
  | 'applying'
  | 'applied'
  | 'apply_failed';

export type Change = 'added' | 'updated' | 'removed' | 'unchanged';

export interface ChangeCounts {
  added: number;
  updated: number;
  removed: number;
  unchanged: number;
}

export interface RunRecord {
  id: string;
  tenantId: string;
  sourceId: string;
  status: RunStatus;
  /** The active generation when the run started: what it is diffed against and applied onto. */
  baseGeneration: number;
  /** The source's staged revision when the run started; the run's item set is pinned there. */
  stagedRevision: number;
  /** Set once discovery completed. */
  counts: ChangeCounts | null;
  /** Completed with nothing added, updated or removed. */
  noop: boolean | null;
  /** The generation this run's apply published. */
  generation: number | null;
  /** Why the run failed, conflicted or could not be applied. */
  reason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface ChangeRecord {
  key: string;
  change: Change;
  /** The pinned item's hash; null for a removed item. */
  contentHash: string | null;
  /** The base generation's hash; null for an added item. */
  previousHash: string | null;
}

export interface GenerationRecord {
  sourceId: string;
  number: number;
  runId: string;
  itemCount: number;
  passageCount: number;
  createdAt: Date;
}

/** One page of a list: newest first unless the resource says otherwise. */
export interface Page {
  limit: number;
  /** Only records strictly after this position in the list's order. */
  after?: string | undefined;
}
