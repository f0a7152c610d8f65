import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from '@keyhook/core/store';
import type pg from 'pg';
import { withTransaction } from './checkout.js';
import {
  type JoinedTransaction,
  type OneCallLayer,
  type Queryable,
  readExecutorRows,
  type StatementConfig,
} from './host-transaction.js';
import { migrationLockKey, quoteSchema } from './schema-name.js';

/**
 * The publish as one call, for a data layer that pays a round trip through itself on every
 * statement and cannot prepare one (Prisma): the store's own publish statement (its `text`,
 * verbatim) wrapped in a PL/pgSQL function, so one call does what SAVEPOINT, the statement and
 * RELEASE do. The function's exception block is the savepoint: a failure inside rolls back only
 * the publish and comes back as a row naming its SQLSTATE, so the caller's transaction stays
 * usable; PL/pgSQL keeps the statement's plan for the session, as a named statement would.
 *
 * The function is made through the store's own pool on first use, named by a digest of the
 * text, under the migration lock (src/migration-driver.ts), so instances and releases never
 * collide. A layer's database is trusted to have it only once a publish through the savepoint
 * saw it there; until then, and when it cannot be made (no CREATE on the schema), the publish
 * goes through the savepoint.
 */
export class PublishFunction {
  private made: Promise<FunctionName | null> | undefined;
  private readonly reached = new WeakSet<object>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
    private readonly text: string,
    private readonly logger: Logger,
  ) {}

  /** How `joined` should publish: through the function where it may, else as it is. */
  async route(joined: JoinedTransaction): Promise<JoinedTransaction> {
    const layer = joined.oneCall;
    if (layer === undefined) return joined;
    const name = await this.make();
    if (name === null) return joined;
    if (this.reached.has(layer.database)) return this.through(name, layer, joined.library);
    return {
      library: joined.library,
      inSavepoint: (savepoint, work) =>
        joined.inSavepoint(savepoint, async (client) => {
          const result = await work(client);
          const { rows } = await client.query<{ present: boolean }>({
            text: 'SELECT to_regprocedure($1) IS NOT NULL AS present',
            values: [name.signature],
          });
          if (rows[0]?.present === true) this.reached.add(layer.database);
          return result;
        }),
    };
  }

  /** The publish statement as a call of the function; any other statement is a bug here. */
  private through(name: FunctionName, layer: OneCallLayer, library: string): JoinedTransaction {
    const call = `SELECT r FROM ${name.qualified}(${name.types.map((_, i) => `$${i + 1}`).join(', ')}) AS r`;
    const client: Queryable = {
      readsVoid: false,
      query: async <R>(statement: StatementConfig | string) => {
        if (typeof statement === 'string' || statement.text !== this.text)
          throw new Error('keyhook: only the publish statement goes through the publish function');
        const rows = await layer.executor.executeSql(call, statement.values ?? []);
        const decoded = readExecutorRows(rows.map((row) => parseJson(row.r)));
        const failure = decoded.find((row) => typeof row.keyhook_sqlstate === 'string');
        if (failure)
          throw Object.assign(new Error(String(failure.keyhook_message)), { code: failure.keyhook_sqlstate });
        return { rows: decoded as R[] };
      },
    };
    // No SAVEPOINT: the function's exception block is one.
    return { library, inSavepoint: (_savepoint, work) => work(client) };
  }

  private make(): Promise<FunctionName | null> {
    this.made ??= this.create().catch((error: unknown) => {
      this.logger.warn(
        { err: error },
        'keyhook could not make its publish function; publishes through Prisma take the savepoint route',
      );
      return null;
    });
    return this.made;
  }

  private async create(): Promise<FunctionName> {
    const digest = createHash('sha256').update(this.text).digest('hex').slice(0, 24);
    const qualified = `${quoteSchema(this.schema)}.keyhook_publish_${digest}`;
    return withTransaction(this.pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [migrationLockKey(this.schema)]);
      // The parameters' types as the server infers them for the statement: PREPARE, read, DEALLOCATE.
      const probe = `keyhook_probe_${randomBytes(6).toString('hex')}`;
      await client.query(`PREPARE ${probe} AS ${this.text}`);
      const { rows } = await client.query<{ types: string[] }>(
        'SELECT parameter_types::text[] AS types FROM pg_prepared_statements WHERE name = $1',
        [probe],
      );
      await client.query(`DEALLOCATE ${probe}`);
      const types = rows[0]!.types;
      await client.query(`CREATE OR REPLACE FUNCTION ${qualified}(${types.join(', ')})
        RETURNS SETOF jsonb LANGUAGE plpgsql VOLATILE AS $keyhook$
        DECLARE keyhook_row record;
        BEGIN
          FOR keyhook_row IN ${this.text} LOOP
            RETURN NEXT to_jsonb(keyhook_row);
          END LOOP;
        EXCEPTION WHEN OTHERS THEN
          RETURN NEXT jsonb_build_object('keyhook_sqlstate', SQLSTATE, 'keyhook_message', SQLERRM);
        END
        $keyhook$`);
      return { qualified, types, signature: `${qualified}(${types.join(', ')})` };
    });
  }
}

interface FunctionName {
  /** `"schema".keyhook_publish_<digest>` */
  qualified: string;
  /** Its parameters' types, in order. */
  types: string[];
  /** What to_regprocedure takes. */
  signature: string;
}

function parseJson(value: unknown): Record<string, unknown> {
  return (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown>;
}
