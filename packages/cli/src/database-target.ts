import { redact } from './errors.js';
import { UsageError } from './io.js';

/** Where `keyhook migrate` runs, chosen from `--database` (or `DATABASE_URL`). */
export type DatabaseTarget =
  | {
      kind: 'sqlite';
      filename: string;
      /** The file as output may show it: any `user:password@` in it scrubbed. */
      where: string;
    }
  | {
      kind: 'postgres';
      connectionString: string;
      schema: string | undefined;
      /** Host, port and database name: what output may show of the URL. */
      where: string;
      /** The URL's password as written and decoded, to scrub from any message. */
      secrets: string[];
    };

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i;
// Anything that starts like a URL (`scheme:`), with or without `//`: `postgres:/u:pw@host/db` too.
const URL_SCHEME = /^([a-z][a-z0-9+.-]*):(\/\/)?/i;
// `C:\data\keyhook.db` and `C:/data/keyhook.db` start like a URL of scheme `c` but are paths.
const WINDOWS_DRIVE = /^[a-z]:[\\/]/i;

/**
 * A `postgres://` or `postgresql://` URL selects PostgreSQL; a Windows drive path or anything
 * that does not start like a URL is a SQLite file path. Anything else that starts like a URL
 * (`mysql://…`, or `postgres:/…` with one slash) is refused rather than taken for a file name:
 * it would fail as a path, or worse create a file, with the URL (and its password) in the output.
 */
export function databaseTarget(database: string | undefined, schema: string | undefined): DatabaseTarget {
  if (database === undefined || database.trim() === '') {
    throw new UsageError('pass --database <postgres://…|path/to/file.db>, or set DATABASE_URL');
  }
  if (POSTGRES_URL.test(database)) return postgresTarget(database, schema);
  const url = WINDOWS_DRIVE.test(database) ? null : URL_SCHEME.exec(database);
  if (url) {
    // Only the scheme is echoed: the rest may hold a password.
    const scheme = `${url[1]}:${url[2] ?? ''}`;
    throw new UsageError(
      /^postgres(?:ql)?$/i.test(url[1]!)
        ? `--database starts with ${scheme} but is not a postgres:// URL: write postgres://user@host:port/database`
        : `a ${scheme} URL is not a database keyhook's stores open: pass a postgres:// URL or a SQLite file ` +
            'path (a file whose name has a colon: ./name)',
    );
  }
  if (schema !== undefined) throw new UsageError('--schema applies to PostgreSQL only, not to a SQLite file');
  return { kind: 'sqlite', filename: database, where: redact(database) };
}

function postgresTarget(connectionString: string, schema: string | undefined): DatabaseTarget {
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    throw new UsageError('--database is not a valid postgres:// URL');
  }
  const host = url.host || url.searchParams.get('host') || 'the default host';
  const name = safeDecode(url.pathname.slice(1));
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
