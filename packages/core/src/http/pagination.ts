import { z } from 'zod';
import type { IdPrefix } from '../ids.js';
import { isWellFormedId } from '../ids.js';
import { validationFailed } from '../validation.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/** The query parameters every list takes. */
export const LIST_QUERY = ['limit', 'cursor'] as const;
/** A list page's records stop near this many bytes of JSON unless the host says (docs/decisions.md §14). */
export const DEFAULT_LIST_BYTE_BUDGET = 1024 * 1024;
/** The smallest budget `listByteBudget` takes: below it, a page of ordinary records would hold only a few. */
export const MIN_LIST_BYTE_BUDGET = 16 * 1024;

export interface PageRequest {
  limit: number;
  before: string | undefined;
}

export interface PageResponse<View> {
  data: View[];
  nextCursor: string | null;
}

/** A list's body as the OpenAPI document describes it: `{ data: [item…], nextCursor }`. */
export function pageSchema<Item extends z.ZodType>(item: Item) {
  return z.object({
    data: z.array(item),
    nextCursor: z
      .string()
      .nullable()
      .meta({ description: 'Pass as ?cursor= for the next page; null on the last page.' }),
  });
}

/** `?limit=` (1–100, default 20) and an opaque `?cursor=` (docs/decisions.md §1.6). */
export function parsePageRequest(query: URLSearchParams, prefix: IdPrefix): PageRequest {
  const limit = parseListLimit(query.get('limit'));
  const before = parseListCursor(query.get('cursor'), (id) => isWellFormedId(id, prefix));
  return { limit, before };
}

/** `?limit=`: a whole number from 1 to 100, 20 when absent; anything else is 400 `validation_failed`. */
export function parseListLimit(raw: string | null): number {
  if (raw === null) return DEFAULT_LIMIT;
  const limit = /^\d{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) {
    throw validationFailed([{ path: 'limit', message: `must be a whole number from 1 to ${MAX_LIMIT}` }]);
  }
  return limit;
}

/**
 * `?cursor=`: the position a list's `nextCursor` encoded, or undefined when absent or empty. A
 * cursor that does not decode, or whose position `valid` refuses, is 400 `validation_failed`.
 */
export function parseListCursor(
  raw: string | null,
  valid: (position: string) => boolean,
): string | undefined {
  if (raw === null || raw === '') return undefined;
  const position = decodeCursor(raw);
  if (position === undefined || !valid(position)) {
    throw validationFailed([{ path: 'cursor', message: 'is not a cursor this list returned' }]);
  }
  return position;
}

/** The opaque form of a list position (an id, a key, a number as text). */
export function encodeCursor(position: string): string {
  return Buffer.from(position, 'utf8').toString('base64url');
}

/** `createKeyhook`'s `listByteBudget`: whole bytes, at least MIN_LIST_BYTE_BUDGET; 1 MiB when absent. */
export function checkListByteBudget(budget: number | undefined): number {
  const value = budget ?? DEFAULT_LIST_BYTE_BUDGET;
  if (!Number.isSafeInteger(value) || value < MIN_LIST_BYTE_BUDGET) {
    throw new TypeError(
      `keyhook: listByteBudget must be whole bytes, at least ${MIN_LIST_BYTE_BUDGET} (default ${DEFAULT_LIST_BYTE_BUDGET})`,
    );
  }
  return value;
}

/**
 * What a page holds (docs/decisions.md §14): the views of `rows` in order, at most `limit`, while
 * their JSON stays within `budget` bytes. The first is held however large, so a page is never
 * empty while records remain. `last` is the last row held; `more` says rows were left out.
 */
export function withinBudget<Row, View>(
  rows: readonly Row[],
  limit: number,
  budget: number,
  view: (row: Row) => View,
): { data: View[]; last: Row | undefined; more: boolean } {
  const data: View[] = [];
  let last: Row | undefined;
  let bytes = 0;
  for (const row of rows) {
    if (data.length === limit) break;
    const shown = view(row);
    const size = Buffer.byteLength(JSON.stringify(shown), 'utf8');
    if (data.length > 0 && bytes + size > budget) break;
    bytes += size;
    data.push(shown);
    last = row;
  }
  return { data, last, more: rows.length > data.length };
}

/**
 * Ask the store for `limit + 1` rows; the extra row only says whether a next page exists. The
 * page stops early at `budget` bytes of records (withinBudget).
 */
export function toPage<Row extends { id: string }, View>(
  rows: Row[],
  limit: number,
  view: (row: Row) => View,
  budget: number = DEFAULT_LIST_BYTE_BUDGET,
): PageResponse<View> {
  return pageOf(rows, limit, view, (row) => row.id, budget);
}

/**
 * `toPage` for any list: `position` says where a row stands (a key, a number as text), and the
 * next cursor encodes the last row held, so the next page starts right after it.
 */
export function pageOf<Row, View>(
  rows: Row[],
  limit: number,
  view: (row: Row) => View,
  position: (row: Row) => string,
  budget: number = DEFAULT_LIST_BYTE_BUDGET,
): PageResponse<View> {
  const page = withinBudget(rows, limit, budget, view);
  return {
    data: page.data,
    nextCursor: page.more && page.last !== undefined ? encodeCursor(position(page.last)) : null,
  };
}

function decodeCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return undefined;
  return Buffer.from(cursor, 'base64url').toString('utf8');
}
