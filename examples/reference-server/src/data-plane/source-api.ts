import { type Clock, KeyhookError, type RandomBytes } from '@keyhook/core';
import {
  newId,
  pageOf,
  parseListCursor,
  parseListLimit,
  parseOrThrow,
  validationFailed,
} from '@keyhook/core/http';
import { yieldToEventLoop } from './db.js';
import { contentHash } from './hash.js';
import type { KeyedWrite, RequestKey } from './idempotency-keys.js';
import type { ItemFields, SourceRecord } from './model.js';

import { isSourceId, refuseSource, sourceNotFound } from './refusals.js';
import {
  batchSchema,
  ITEM_KEY,
  itemFieldsSchema,
  itemKeySchema,
  keyedItemSchema,
  MAX_CONTENT_BYTES,
  snapshotSchema,
  sourceCreateSchema,
  sourcePatchSchema,
} from './schemas.js';
import type { ItemOperation, ItemWrites, SourceRefusal, SourceStorage } from './sources.js';
import { itemView, sourceView } from './views.js';

/**
 * Items a snapshot validates, or hashes, between two yields to the event loop: 250 take about
 * 10 ms either way (canonical JSON and SHA-256 per item; zod per item), half a CHUNK_ROWS.
 */
const ITEMS_PER_YIELD = 250;

type BatchResult =
  | { key: string; result: 'created' | 'updated' | 'unchanged' | 'deleted' | 'not_found' }
  | { key: string | null; error: { code: string; message: string; details?: unknown[] } };

/**
 * Sources and their staged items (data-plane.md §4.2) as a host app writes them: the rules
 * here, storage in sources.ts, HTTP in routes.ts. Tenants come from the caller's API key only.
 */
export class SourceApi {
  constructor(
    private readonly deps: {
      sources: SourceStorage;
      clock: Clock;
      randomBytes: RandomBytes;
      /** A list page's byte budget (data-plane.md §3.3): keyhook's `listByteBudget`. */
      listByteBudget: number;
    },
  ) {}

  /** With `key`, the key and its answer commit with the source (data-plane.md §3.4). */
  async createSource(tenantId: string, body: unknown, key?: RequestKey) {
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
    const answer = () => ({ source: sourceView(source) });
    await this.deps.sources.create(source, key?.write(answer));
    return answer();
  }

  async listSources(tenantId: string, query: URLSearchParams) {
    const limit = parseListLimit(query.get('limit'));
    const before = parseListCursor(query.get('cursor'), isSourceId);
    const rows = await this.deps.sources.list(tenantId, limit + 1, before);
    return pageOf(rows, limit, sourceView, (source) => source.id, this.deps.listByteBudget);
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

  async deactivateSource(tenantId: string, sourceId: string, key?: RequestKey) {
    const answer = (source: SourceRecord | undefined) => {
      if (!source) throw sourceNotFound();
      return { source: sourceView(source) };
    };
    return answer(
      isSourceId(sourceId)
        ? await this.deps.sources.deactivate(tenantId, sourceId, this.deps.clock.now(), key?.write(answer))
        : undefined,
    );
  }

  // --- items ---

  async listItems(tenantId: string, sourceId: string, query: URLSearchParams) {
    await this.source(tenantId, sourceId);
    const limit = parseListLimit(query.get('limit'));
    const after = parseListCursor(query.get('cursor'), (key) => ITEM_KEY.test(key));
    const budget = this.deps.listByteBudget;
    const read = await this.deps.sources.listItems(tenantId, sourceId, limit + 1, budget, after);
    // An item read without its content only says a next page exists: the page holds none of those.
    return pageOf(read.items, Math.min(limit, read.whole), itemView, (item) => item.key, budget);
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
   * others are applied. With `key`, the key and its answer commit with the writes; a batch with
   * no valid operation writes nothing and keeps no answer.
   */
  async batch(tenantId: string, sourceId: string, body: unknown, key?: RequestKey) {
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
    if (operations.length === 0) {
      await this.writable(tenantId, sourceId);
      return { results };
    }
    const answer = (outcome: SourceRefusal | ItemWrites) => {
      const answered = [...results];
      this.written(outcome).results.forEach((result, index) => {
        answered[positions[index]!] = { key: operations[index]!.key, result };
      });
      return { results: answered };
    };
    return answer(await this.write(tenantId, sourceId, operations, false, key?.write(answer)));
  }

  /** PUT the whole staged set; an empty one only with `?allowEmpty=true`, as it removes everything. */
  async snapshot(tenantId: string, sourceId: string, body: unknown, query: URLSearchParams) {
    const items = await parseSnapshot(body);
    if (items.length === 0 && query.get('allowEmpty') !== 'true') {
      throw validationFailed([
        { path: 'items', message: 'is empty; send ?allowEmpty=true to remove every staged item' },
      ]);
    }
    const seen = new Set<string>();
    const operations: ItemOperation[] = [];
    for (let index = 0; index < items.length; index++) {
      const item = items[index]!;
      if (seen.has(item.key))
        throw validationFailed([{ path: `items.${index}.key`, message: 'appears twice' }]);
      seen.add(item.key);
      if (tooLarge(item.content)) throw contentTooLargeError(`items.${index}.content`);
      operations.push(upsertOf(item.key, item));
      // Hashing 100,000 items takes a while: let other requests in between chunks.
      if ((index + 1) % ITEMS_PER_YIELD === 0) await yieldToEventLoop();
    }
    const written = this.written(await this.write(tenantId, sourceId, operations, true));
    const count = (result: string) => written.results.filter((r) => r === result).length;
    return {
      source: sourceView(written.source),
      created: count('created'),
      updated: count('updated'),
      unchanged: count('unchanged'),
      removed: written.removed,
    };
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

  private write(
    tenantId: string,
    sourceId: string,
    operations: ItemOperation[],
    snapshot: boolean,
    keyed?: KeyedWrite<SourceRefusal | ItemWrites>,
  ) {
    if (!isSourceId(sourceId)) throw sourceNotFound();
    return this.deps.sources.writeItems(tenantId, sourceId, operations, {
      snapshot,
      at: this.deps.clock.now(),
      keyed,
    });
  }

  private written(outcome: SourceRefusal | ItemWrites): ItemWrites {
    refuseSource(outcome);
    return outcome as ItemWrites;
  }
}

type SnapshotItem = ReturnType<typeof keyedItemSchema.parse>;

/**
 * The snapshot body, as `snapshotSchema` parses it, validated an item at a time in chunks with
 * the event loop let in between (one parse of 100,000 items holds it for over 100 ms). Any
 * problem — the envelope or an item — is reported by `snapshotSchema` itself, so the error is
 * the one a single parse gives.
 */
async function parseSnapshot(body: unknown): Promise<SnapshotItem[]> {
  const items = (body as { items?: unknown } | null)?.items;
  if (
    typeof body !== 'object' ||
    body === null ||
    Array.isArray(body) ||
    Object.keys(body).length !== 1 ||
    !Array.isArray(items)
  ) {
    return parseOrThrow(snapshotSchema, body).items;
  }
  const parsed: SnapshotItem[] = [];
  for (let index = 0; index < items.length; index++) {
    const result = keyedItemSchema.safeParse(items[index]);
    if (!result.success) return parseOrThrow(snapshotSchema, body).items; // throws, with every issue
    parsed.push(result.data);
    if ((index + 1) % ITEMS_PER_YIELD === 0) await yieldToEventLoop();
  }
  return parsed;
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
