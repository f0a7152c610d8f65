import { createHash } from 'node:crypto';
import type pg from 'pg';
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

  constructor(texts: readonly string[], enabled: boolean) {
    if (!enabled) return;
    for (const text of texts) {
      this.names.set(text, `keyhook_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`);
    }
  }

  /**
   * The query as pg takes it: under its name when it is one of the prepared statements, and with
   * the store's type parsers (src/timestamps.ts).
   */
  config(text: string, values: unknown[]): pg.QueryConfig {
    const name = this.names.get(text);
    return name === undefined
      ? { text, values, types: STORE_TYPES }
      : { name, text, values, types: STORE_TYPES };
  }
}
