import { encodeCursor, type PageResponse } from '@keyhook/core';

/** DESIGN.md §2 lists: `limit + 1` rows were read; the extra one only says a next page exists. */
export function page<Row, View>(
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
