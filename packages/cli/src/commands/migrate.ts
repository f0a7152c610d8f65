import type { Logger } from '@keyhook/core';
import { parseOptions } from '../args.js';
import { type DatabaseTarget, databaseTarget } from '../database-target.js';
import { describeError, redact } from '../errors.js';
import { type Command, type Io, UsageError } from '../io.js';
import { loadStorePackage } from '../load-store.js';

/** One store's migrations, whichever package runs them. */
interface Migrations {
  /** What the output calls the database: never the URL, which may hold a password. */
  target: string;
  apply(logger: Logger): Promise<{ name: string; durationMs: number }[]>;
  pending(): Promise<{ name: string }[]>;
}

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'Apply pending store migrations to a PostgreSQL database or a SQLite file',
  help: `Usage: keyhook migrate --database <postgres://…|path/to/file.db> [--schema <name>] [--dry-run]

Applies the store's pending migrations, each in its own transaction, and prints each one with
its duration. Run it in a release step, then start the app with migrations: 'refuse'.

Options:
  --database <url|file>  A postgres:// or postgresql:// URL (needs @keyhook/store-postgres and pg),
                         or a SQLite file path (needs @keyhook/store-sqlite and better-sqlite3).
                         Default: the DATABASE_URL environment variable.
  --schema <name>        The PostgreSQL schema keyhook's tables live in. Default: keyhook.
  --dry-run              List the pending migrations; apply nothing.
  -h, --help             Show this help.
`,
  async run(args, io) {
    const values = parseOptions(
      args,
      { database: { type: 'string' }, schema: { type: 'string' }, 'dry-run': { type: 'boolean' } },
      'pass the database with --database <url|file>',
    );
    const target = databaseTarget(values.database ?? io.env['DATABASE_URL'], values.schema);
    const secrets = target.kind === 'postgres' ? target.secrets : [];
    try {
      const migrations = await migrationsOf(target);
      if (values['dry-run']) await listPending(migrations, io);
      else await applyPending(migrations, io);
    } catch (error) {
      const reason = redact(describeError(error), secrets);
      throw isOptionError(error) ? new UsageError(reason) : new Error(reason);
    }
  },
};

// The store's own checks of what the command passes on from its flags (--schema), should they
// be stricter than the command's: those are bad usage. Any other error, a TypeError from a bug
// or a driver included, is a failure.
const OPTION_ERRORS = [/^Invalid Postgres schema name /];

function isOptionError(error: unknown): boolean {
  return error instanceof TypeError && OPTION_ERRORS.some((pattern) => pattern.test(error.message));
}

async function applyPending(migrations: Migrations, io: Io): Promise<void> {
  // The store checks what it was given (a schema name, a newer release) before this prints.
  await migrations.pending();
  io.stdout.write(`Migrating ${migrations.target}\n`);
  const started = performance.now();
  const applied = await migrations.apply(printingLogger(io));
  const ms = Math.round(performance.now() - started);
  io.stdout.write(
    applied.length === 0
      ? `Nothing to apply: ${migrations.target} is up to date.\n`
      : `Applied ${plural(applied.length, 'migration')} in ${ms} ms.\n`,
  );
}

async function listPending(migrations: Migrations, io: Io): Promise<void> {
  const pending = await migrations.pending();
  if (pending.length === 0) {
    io.stdout.write(`Nothing pending: ${migrations.target} is up to date.\n`);
    return;
  }
  io.stdout.write(`${plural(pending.length, 'migration')} pending for ${migrations.target}:\n`);
  for (const migration of pending) io.stdout.write(`  ${migration.name}\n`);
  io.stdout.write('Nothing was applied (--dry-run).\n');
}

async function migrationsOf(target: DatabaseTarget): Promise<Migrations> {
  if (target.kind === 'sqlite') {
    const store = await loadStorePackage(
      '@keyhook/store-sqlite',
      'better-sqlite3',
      () => import('@keyhook/store-sqlite'),
    );
    const { filename } = target;
    return {
      target: `the SQLite database at ${target.where}`,
      apply: (logger) => store.migrate({ filename, logger }),
      pending: () => store.pendingMigrations({ filename }),
    };
  }
  const store = await loadStorePackage(
    '@keyhook/store-postgres',
    'pg',
    () => import('@keyhook/store-postgres'),
  );
  const { connectionString, schema = store.DEFAULT_SCHEMA } = target;
  return {
    target: `schema "${schema}" of the PostgreSQL ${target.where}`,
    apply: (logger) => store.migrate({ connectionString, schema, logger }),
    pending: () => store.pendingMigrations({ connectionString, schema }),
  };
}

/**
 * The stores log each migration's start at `debug` and its end at `info`: both are the command's
 * progress, so a long rebuild shows which migration it is in.
 */
function printingLogger(io: Io): Logger {
  return {
    debug: (_context, message) => io.stdout.write(`  ${message}\n`),
    info: (_context, message) => io.stdout.write(`  ${message}\n`),
    warn: (_context, message) => io.stderr.write(`warning: ${message}\n`),
    error: (_context, message) => io.stderr.write(`error: ${message}\n`),
  };
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
