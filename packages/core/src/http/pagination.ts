import type { IdPrefix } from '../ids.js';
import { isWellFormedId } from '../ids.js';
import { validationFailed } from '../validation.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export interface PageRequest {
  limit: number;
  before: string | undefined;
}

export interface PageResponse<View> {
  data: View[];
  nextCursor: string | null;
}

/** `?limit=` (1–100, default 20) and an opaque `?cursor=` (DESIGN.md §2 "Lists"). */
export function parsePageRequest(query: URLSearchParams, prefix: IdPrefix): PageRequest {
  const rawLimit = query.get('limit');
  let limit = DEFAULT_LIMIT;
  if (rawLimit !== null) {
    limit = /^\d{1,3}$/.test(rawLimit) ? Number(rawLimit) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_LIMIT)) {
      throw validationFailed([{ path: 'limit', message: `must be a whole number from 1 to ${MAX_LIMIT}` }]);
    }
  }
  const rawCursor = query.get('cursor');
  let before: string | undefined;
  if (rawCursor !== null && rawCursor !== '') {
    before = decodeCursor(rawCursor);
    if (!before || !isWellFormedId(before, prefix)) {
      throw validationFailed([{ path: 'cursor', message: 'is not a cursor this list returned' }]);
    }
  }
  return { limit, before };
}

/** Ask the store for `limit + 1` rows; the extra row only says whether a next page exists. */
export function toPage<Row extends { id: string }, View>(
  rows: Row[],
  limit: number,
  view: (row: Row) => View,
): PageResponse<View> {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    data: page.map(view),
    nextCursor: rows.length > limit && last ? Buffer.from(last.id, 'utf8').toString('base64url') : null,
  };
}

function decodeCursor(cursor: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(cursor)) return undefined;
  return Buffer.from(cursor, 'base64url').toString('utf8');
}
