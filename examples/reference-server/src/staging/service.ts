import {
  type Clock,
  encodeCursor,
  KeyhookError,
  newId,
  type PageResponse,
  parseListCursor,
  parseListLimit,
  parseOrThrow,
  type RandomBytes,
  validationFailed,
} from '@keyhook/core';
import { StagingError } from './errors.js';
import { contentHash } from './hash.js';
import type { StagingJobs } from './jobs.js';
import type { Change, ItemFields } from './model.js';
import type { ApplyOutcome, RunStorage, StartOutcome } from './runs.js';
import {
  batchSchema,
  changeFilterSchema,
  ITEM_KEY,
  itemFieldsSchema,
  itemKeySchema,
  keyedItemSchema,
  MAX_CONTENT_BYTES,
  runStartSchema,
  snapshotSchema,
  sourceCreateSchema,
  sourcePatchSchema,
} from './schemas.js';
import type { ItemOperation, ItemWrites, SourceRefusal, SourceStorage } from './sources.js';
import { changeView, generationView, itemView, runView, sourceView } from './views.js';

type BatchResult =
  | { key: string; result: 'created' | 'updated' | 'unchanged' | 'deleted' | 'not_found' }
  | { key: string | null; error: { code: string; message: string; details?: unknown[] } };

const ID = /^[a-z]{2,3}_[0-9a-hjkmnp-tv-z]{26}$/;

/**
 * The reference data plane (DESIGN.md §7) as a host app writes it: every rule here, storage in
 * sources.ts and runs.ts, HTTP in routes.ts. Tenants come from the caller's API key only.
 */
export class Staging {
  constructor(
    private readonly deps: {
      sources: SourceStorage;
      runs: RunStorage;
      jobs: StagingJobs;
      clock: Clock;
      randomBytes: RandomBytes;
    },
  ) {}

  // --- sources ---

  async createSource(tenantId: string, body: unknown) {
    const input = parseOrThrow(sourceCreateSchema, body);
    const now = this.deps.clock.now();
    const source = {
      id: newId('src', this.deps.clock, this.deps.randomBytes),
      tenantId,
      name: input.name,
      description: input.description ?? null,
      status: 'active' as const,
      activeGeneration: 0,
      stagedRevision: 0,
      applyingRunId: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.sources.create(source);
    return { source: sourceView(source) };
  }

  async listSources(tenantId: string, query: URLSearchParams) {
    const limit = parseListLimit(query.get('limit'));
    const before = parseListCursor(query.get('cursor'), (id) => id.startsWith('src_') && ID.test(id));
    const rows = await this.deps.sources.list(tenantId, limit + 1, before);
    return page(rows, limit, sourceView, (source) => source.id);
  }

  async getSource(tenantId: string, sourceId: string) {
    return { source: sourceView(await this.source(tenantId, sourceId)) };
  }

  async updateSource(tenantId: string, sourceId: string, body: unknown) {
    const patch = parseOrThrow(sourcePatchSchema, body);
    const source = isSourceId(sourceId)
      ? await this.deps.sources.update(tenantId, sourceId, patch, this.deps.clock.now())
      : undefined;
    if (!source) throw sourceNotFound();
    return { source: sourceView(source) };
  }

  async deactivateSource(tenantId: string, sourceId: string) {
    const source = isSourceId(sourceId)
      ? await this.deps.sources.deactivate(tenantId, sourceId, this.deps.clock.now())
      : undefined;
    if (!source) throw sourceNotFound();
    return { source: sourceView(source) };
  }

  // --- items ---

  async listItems(tenantId: string, sourceId: string, query: URLSearchParams) {
    await this.source(tenantId, sourceId);
    const limit = parseListLimit(query.get('limit'));
    const after = parseListCursor(query.get('cursor'), (key) => ITEM_KEY.test(key));
    const rows = await this.deps.sources.listItems(tenantId, sourceId, limit + 1, after);
    return page(rows, limit, itemView, (item) => item.key);
  }

  /** PUT one item: `created`, `updated` or `unchanged`, decided by its content hash. */
  async upsertItem(tenantId: string, sourceId: string, key: string, body: unknown) {
    const itemKey = parseOrThrow(itemKeySchema, key);
    const operation = upsertOf(itemKey, parseOrThrow(itemFieldsSchema, body));
    const written = this.written(await this.write(tenantId, sourceId, [operation], false));
    const item = await this.deps.sources.getItem(tenantId, sourceId, itemKey);
    return { result: written.results[0], item: itemView(item!) };
  }

  async deleteItem(tenantId: string, sourceId: string, key: string): Promise<void> {
    const itemKey = parseOrThrow(itemKeySchema, key);
    const written = this.written(
      await this.write(tenantId, sourceId, [{ kind: 'delete', key: itemKey }], false),
    );
    if (written.results[0] === 'not_found') throw new KeyhookError('not_found', 'No item with that key.');
  }

  /**
   * Up to 1000 upserts and deletes, applied in order in one transaction; one result per
   * operation, in order. An operation that is not valid fails alone, with its error, and the
   * others are applied.
   */
  async batch(tenantId: string, sourceId: string, body: unknown) {
    const batch = parseOrThrow(batchSchema, body);
    const results: (BatchResult | undefined)[] = [];
    const operations: ItemOperation[] = [];
    const positions: number[] = [];
    const add = (operation: ItemOperation) => {
      positions.push(results.length);
      results.push(undefined);
      operations.push(operation);
    };
    for (const raw of batch.upsert ?? []) {
      const parsed = keyedItemSchema.safeParse(raw);
      const key = typeof (raw as { key?: unknown })?.key === 'string' ? (raw as { key: string }).key : null;
      if (!parsed.success) results.push({ key, error: invalid(parsed.error.issues) });
      else if (tooLarge(parsed.data.content)) results.push({ key, error: contentTooLarge() });
      else add(upsertOf(parsed.data.key, parsed.data));
    }
    for (const raw of batch.delete ?? []) {
      const parsed = itemKeySchema.safeParse(raw);
      if (!parsed.success)
        results.push({ key: typeof raw === 'string' ? raw : null, error: invalid(parsed.error.issues) });
      else add({ kind: 'delete', key: parsed.data });
    }
    if (operations.length > 0) {
      const written = this.written(await this.write(tenantId, sourceId, operations, false));
      written.results.forEach((result, index) => {
        results[positions[index]!] = { key: operations[index]!.key, result };
      });
    } else {
      await this.writable(tenantId, sourceId);
    }
    return { results };
  }

  /** PUT the whole staged set; an empty one only with `?allowEmpty=true`, as it removes everything. */
  async snapshot(tenantId: string, sourceId: string, body: unknown, query: URLSearchParams) {
    const { items } = parseOrThrow(snapshotSchema, body);
    if (items.length === 0 && query.get('allowEmpty') !== 'true') {
      throw validationFailed([
        { path: 'items', message: 'is empty; send ?allowEmpty=true to remove every staged item' },
      ]);
    }
    const seen = new Set<string>();
    items.forEach((item, index) => {
      if (seen.has(item.key))
        throw validationFailed([{ path: `items.${index}.key`, message: 'appears twice' }]);
      seen.add(item.key);
      if (tooLarge(item.content)) throw contentTooLargeError(`items.${index}.content`);
    });
    const written = this.written(
      await this.write(
        tenantId,
        sourceId,
        items.map((item) => upsertOf(item.key, item)),
        true,
      ),
    );
    const count = (result: string) => written.results.filter((r) => r === result).length;
    return {
      source: sourceView(written.source),
      created: count('created'),
      updated: count('updated'),
      unchanged: count('unchanged'),
      removed: written.removed,
    };
  }

  // --- runs ---

  /** POST a run: 202; discovery runs as a job. A conflicting base is the run's own outcome. */
  async startRun(tenantId: string, sourceId: string, body: unknown) {
    const input = parseOrThrow(runStartSchema, body ?? {});
    if (!isSourceId(sourceId)) throw sourceNotFound();
    const runId = newId('run', this.deps.clock, this.deps.randomBytes);
    const outcome: StartOutcome = await this.deps.runs.start(
      tenantId,
      sourceId,
      runId,
      input.expectedBaseGeneration,
      this.deps.clock.now(),
    );
    refuseSource(outcome);
    if (outcome.outcome !== 'started') throw new Error('unreachable');
    if (outcome.run.status === 'queued') this.deps.jobs.kick();
    return { run: runView(outcome.run) };
  }

  async listRuns(tenantId: string, sourceId: string, query: URLSearchParams) {
    await this.source(tenantId, sourceId);
    const limit = parseListLimit(query.get('limit'));
    const before = parseListCursor(query.get('cursor'), (id) => id.startsWith('run_') && ID.test(id));
    const rows = await this.deps.runs.list(tenantId, sourceId, limit + 1, before);
    return page(rows, limit, runView, (run) => run.id);
  }

  async getRun(tenantId: string, sourceId: string, runId: string) {
    return { run: runView(await this.run(tenantId, sourceId, runId)) };
  }

  /** The run's diff, in key order, paged; `?change=` keeps one kind. */
  async runDiff(tenantId: string, sourceId: string, runId: string, query: URLSearchParams) {
    const run = await this.run(tenantId, sourceId, runId);
    const rawChange = query.get('change');
    const change: Change | undefined = rawChange === null ? undefined : parseChange(rawChange);
    const limit = parseListLimit(query.get('limit'));
    const after = parseListCursor(query.get('cursor'), (key) => ITEM_KEY.test(key));
    const rows = await this.deps.runs.changes(tenantId, run.id, change, limit + 1, after);
    return { run: runView(run), ...page(rows, limit, changeView, (c) => c.key) };
  }

  /** POST apply: 202 while the generation is built, or the refusal (DESIGN.md §7 "Apply"). */
  async applyRun(tenantId: string, sourceId: string, runId: string) {
    if (!isSourceId(sourceId) || !isRunId(runId)) throw runNotFound();
    const outcome: ApplyOutcome = await this.deps.runs.requestApply(
      tenantId,
      sourceId,
      runId,
      this.deps.clock.now(),
    );
    refuseSource(outcome);
    switch (outcome.outcome) {
      case 'run_not_found':
        throw runNotFound();
      case 'conflict':
        throw new StagingError(
          'run_conflict',
          outcome.run.reason ?? 'The run conflicts with the active generation.',
          [{ message: outcome.run.reason ?? 'conflict', runId: outcome.run.id }],
        );
      case 'not_ready':
        throw new StagingError(
          'run_not_ready',
          `The run is ${outcome.run.status}; only a completed run can be applied.`,
          [{ message: `status ${outcome.run.status}`, runId: outcome.run.id, status: outcome.run.status }],
        );
      case 'apply_in_progress':
        throw new StagingError(
          'apply_in_progress',
          `The apply of ${outcome.holder} is in flight on this source.`,
          [{ message: 'one apply per source at a time', runId: outcome.holder }],
        );
      case 'applying':
        this.deps.jobs.kick();
        return { run: runView(outcome.run) };
      case 'noop':
        return { run: runView(outcome.run) };
      default:
        throw new Error('unreachable');
    }
  }

  // --- generations ---

  async activeGeneration(tenantId: string, sourceId: string) {
    const source = await this.source(tenantId, sourceId);
    const generation =
      source.activeGeneration === 0
        ? undefined
        : await this.deps.runs.generation(tenantId, sourceId, source.activeGeneration);
    if (!generation) throw new KeyhookError('not_found', 'The source has no active generation yet.');
    return { generation: generationView(generation, source.activeGeneration) };
  }

  async listGenerations(tenantId: string, sourceId: string, query: URLSearchParams) {
    const source = await this.source(tenantId, sourceId);
    const limit = parseListLimit(query.get('limit'));
    const below = parseListCursor(query.get('cursor'), (n) => /^[1-9][0-9]{0,15}$/.test(n));
    const rows = await this.deps.runs.generations(
      tenantId,
      sourceId,
      limit + 1,
      below === undefined ? undefined : Number(below),
    );
    return page(
      rows,
      limit,
      (g) => generationView(g, source.activeGeneration),
      (g) => String(g.number),
    );
  }

  // --- helpers ---

  private async source(tenantId: string, sourceId: string) {
    const source = isSourceId(sourceId) ? await this.deps.sources.get(tenantId, sourceId) : undefined;
    if (!source) throw sourceNotFound();
    return source;
  }

  private async writable(tenantId: string, sourceId: string) {
    const source = await this.source(tenantId, sourceId);
    if (source.status !== 'active') refuseSource({ outcome: 'source_inactive' });
    return source;
  }

  private async run(tenantId: string, sourceId: string, runId: string) {
    const run =
      isSourceId(sourceId) && isRunId(runId)
        ? await this.deps.runs.get(tenantId, sourceId, runId)
        : undefined;
    if (!run) throw runNotFound();
    return run;
  }

  private write(tenantId: string, sourceId: string, operations: ItemOperation[], snapshot: boolean) {
    if (!isSourceId(sourceId)) throw sourceNotFound();
    return this.deps.sources.writeItems(tenantId, sourceId, operations, {
      snapshot,
      at: this.deps.clock.now(),
    });
  }

  private written(outcome: SourceRefusal | ItemWrites): ItemWrites {
    refuseSource(outcome);
    return outcome as ItemWrites;
  }
}

function upsertOf(
  key: string,
  input: {
    title?: string | null | undefined;
    content: string;
    url?: string | null | undefined;
    metadata?: Record<string, unknown> | null | undefined;
  },
): ItemOperation {
  if (tooLarge(input.content)) throw contentTooLargeError('content');
  const fields: ItemFields = {
    title: input.title ?? null,
    content: input.content,
    url: input.url ?? null,
    metadata: input.metadata ?? null,
  };
  return { kind: 'upsert', key, fields, contentHash: contentHash(fields) };
}

function tooLarge(content: string): boolean {
  // Cheap first: a string of at most a quarter of the limit in UTF-16 units cannot exceed it in UTF-8.
  return content.length > MAX_CONTENT_BYTES / 4 && Buffer.byteLength(content, 'utf8') > MAX_CONTENT_BYTES;
}

function contentTooLarge() {
  return { code: 'payload_too_large', message: `content exceeds ${MAX_CONTENT_BYTES} bytes` };
}

function contentTooLargeError(path: string) {
  return new KeyhookError(
    'payload_too_large',
    `An item's content may be at most ${MAX_CONTENT_BYTES} bytes.`,
    {
      details: [{ path, message: `exceeds ${MAX_CONTENT_BYTES} bytes` }],
    },
  );
}

function invalid(issues: readonly { path: PropertyKey[]; message: string }[]) {
  const details = issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message }));
  return { code: 'validation_failed', message: 'The operation is invalid.', details };
}

function parseChange(raw: string): Change {
  const parsed = changeFilterSchema.safeParse(raw);
  if (!parsed.success) {
    throw validationFailed([{ path: 'change', message: 'must be added, updated, removed or unchanged' }]);
  }
  return parsed.data;
}

function refuseSource(outcome: { outcome: string }): void {
  if (outcome.outcome === 'source_not_found') throw sourceNotFound();
  if (outcome.outcome === 'source_inactive') {
    throw new StagingError('source_inactive', 'The source is inactive: its items and runs are read-only.');
  }
}

const sourceNotFound = () => new KeyhookError('not_found', 'No source with that id.');
const runNotFound = () => new KeyhookError('not_found', 'No run with that id in this source.');
const isSourceId = (id: string) => id.startsWith('src_') && ID.test(id);
const isRunId = (id: string) => id.startsWith('run_') && ID.test(id);

function page<Row, View>(
  rows: Row[],
  limit: number,
  view: (row: Row) => View,
  position: (row: Row) => string,
): PageResponse<View> {
  const data = rows.slice(0, limit);
  const last = data[data.length - 1];
  return {
    data: data.map(view),
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(position(last)) : null,
  };
}
