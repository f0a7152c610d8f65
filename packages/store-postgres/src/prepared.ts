import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { StatementBounds } from './bounds.js';
import { STORE_TYPES } from './timestamps.js';

/**
 * The statements a store runs for every delivery and every key verification, sent as named
 * (prepared) statements: each connection parses one once, and Postgres may then reuse its plan,
 * instead of parsing, analysing and planning it on every call. A name is derived from the text,
 * so stores on other schemas (other texts) never share one. Everything else is sent unnamed,
 * planned with its values each time.
 *
 * Off (`preparedStatements: false`), every statement is unnamed: for a pooler that cannot carry
 * named statements across its server connections (PgBouncer in transaction mode before 1.21, or
 * without `max_prepared_statements`).
 */
export class PreparedStatements {
  private readonly names = new Map<string, string>();

  constructor(
    private readonly enabled: boolean,
    private readonly bounds: StatementBounds,
  ) {}

  /**
   * Sends `text` as a named statement from now on, when prepared statements are on; returns it.
   * Each operation marks its hot statements with it as it builds them (src/statements.ts).
   */
  add(text: string): string {
    if (this.enabled && !this.names.has(text)) {
      this.names.set(text, `keyhook_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`);
    }
    return text;
  }

  /**
   * The query as pg takes it: under its name when it is one of the prepared statements, with the
   * store's type parsers (src/timestamps.ts) and its client-side bound (src/bounds.ts; `bulk` for
   * a statement whose work grows with a queue; `byPosition` for rows as arrays, src/answer.ts).
   */
  config(text: string, values: unknown[], bulk = false, byPosition = false): pg.QueryConfig {
    const name = this.names.get(text);
    const query_timeout = this.bounds.readTimeout(bulk);
    const config: pg.QueryConfig & { query_timeout?: number; rowMode?: 'array' } = {
      text,
      values,
      types: STORE_TYPES,
    };
    if (byPosition) config.rowMode = 'array';
    if (name !== undefined) config.name = name;
    if (query_timeout !== undefined) config.query_timeout = query_timeout;
    return config;
  }
}
