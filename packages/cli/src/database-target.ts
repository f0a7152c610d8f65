import { UsageError } from './io.js';

/** Where `keyhook migrate` runs, chosen from `--database` (or `DATABASE_URL`). */
export type DatabaseTarget =
  | { kind: 'sqlite'; filename: string }
  | {
      kind: 'postgres';
      connectionString: string;
      schema: string | undefined;
      /** Host, port and database name: what output may show of the URL. */
      where: string;
      /** The URL's password as written and decoded, to scrub from any message. */
      secrets: string[];
    };

const POSTGRES_URL = /^postgres(ql)?:\/\//i;
const OTHER_URL = /^([a-z][a-z0-9+.-]*):\/\//i;

/**
 * A `postgres://` or `postgresql://` URL selects PostgreSQL; anything else is a SQLite file path.
 * A URL of another scheme is refused rather than taken for a file name: it would fail as a path,
 * with the URL (and its password) in the error.
 */
export function databaseTarget(database: string | undefined, schema: string | undefined): DatabaseTarget {
  if (database === undefined || database.trim() === '') {
    throw new UsageError('pass --database <postgres://…|path/to/file.db>, or set DATABASE_URL');
  }
  if (POSTGRES_URL.test(database)) return postgresTarget(database, schema);
  const scheme = OTHER_URL.exec(database)?.[1];
  if (scheme !== undefined) {
    throw new UsageError(
      `a ${scheme}:// URL is not a database keyhook's stores open: pass a postgres:// URL or a SQLite file path`,
    );
  }
  if (schema !== undefined) throw new UsageError('--schema applies to PostgreSQL only, not to a SQLite file');
  return { kind: 'sqlite', filename: database };
}

function postgresTarget(connectionString: string, schema: string | undefined): DatabaseTarget {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    throw new UsageError('--database is not a valid postgres:// URL');
  }
  const host = url.host || url.searchParams.get('host') || 'the default host';
  const name = decodeURIComponent(url.pathname.slice(1));
  const where = name ? `database "${name}" on ${host}` : `the default database on ${host}`;
  const secrets = [url.password, safeDecode(url.password), url.searchParams.get('password') ?? ''];
  return { kind: 'postgres', connectionString, schema, where, secrets: secrets.filter((s) => s !== '') };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
