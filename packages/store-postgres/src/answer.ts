/** One row of an answer read by position: its cells in the select list's order. */
export type Cells = readonly unknown[];

/**
 * The answer of a statement whose rows are read by position (pg's `rowMode: 'array'`,
 * postgres.js's `.values()`): the group commit's statements, which answer with many rows of many
 * columns on every delivery (docs/decisions.md §8.14). The select list and each column's position
 * come from one list of `[expression, name]`, so the SQL and the reads cannot disagree.
 */
export interface Answer<Name extends string> {
  /** `expression AS name, …`, for the statement's SELECT. */
  readonly select: string;
  /** The columns' names, in order. */
  readonly names: readonly Name[];
  /** Each column's position in a row. */
  readonly at: Readonly<Record<Name, number>>;
}

export function answer<Name extends string>(
  columns: readonly (readonly [expression: string, name: Name])[],
): Answer<Name> {
  const names = columns.map(([, name]) => name);
  if (new Set(names).size !== names.length) throw new Error(`keyhook: a column named twice in ${names}`);
  return {
    select: columns.map(([expression, name]) => `${expression} AS ${name}`).join(', '),
    names,
    at: Object.fromEntries(names.map((name, index) => [name, index])) as Record<Name, number>,
  };
}

/** Rows as objects (a data layer's answer), as the cells of `answer`: for a client that cannot answer by position. */
export function cellsOf(rows: readonly Record<string, unknown>[], { names }: Answer<string>): Cells[] {
  return rows.map((row) => names.map((name) => row[name]));
}
