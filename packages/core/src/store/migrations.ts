import type { Logger } from '../logger.js';

/**
 * What a store does with pending migrations as it opens: `'apply'` them (the default), or
 * `'refuse'` to open until `migrate()` or `npx keyhook migrate` has applied them.
 */
export type MigrationsMode = 'apply' | 'refuse';

/** A migration the database does not record yet. */
export interface PendingMigration {
  /** The number the file name starts with: 4 for `0004_…`. */
  version: number;
  /** The file name without `.sql`, e.g. `0004_deliveries`. */
  name: string;
}

/** A migration a `migrate()` call applied, and how long it took (waiting for the store's lock included). */
export interface AppliedMigration extends PendingMigration {
  /** Whole milliseconds from asking for the store's migration lock to the commit. */
  durationMs: number;
}

/**
 * Checks a store's `migrations` option, so a typo fails at open instead of quietly meaning
 * `'apply'`. Undefined is `'apply'`; anything else but `'refuse'` is a TypeError.
 */
export function migrationsMode(value: unknown): MigrationsMode {
  if (value === undefined) return 'apply';
  if (value === 'apply' || value === 'refuse') return value;
  throw new TypeError(`migrations must be 'apply' or 'refuse', got ${JSON.stringify(value)}`);
}

/** What a store's refusal names: the database, what is pending, and how to apply it. */
export interface PendingMigrationsErrorOptions {
  /** The database as people know it, e.g. `the PostgreSQL schema "keyhook"`: never a password. */
  database: string;
  /** What is pending, in order. */
  pending: readonly PendingMigration[];
  /** How to apply them, to follow "Apply them first with": a command to paste, or a call. */
  applyWith: string;
}

/**
 * The refusal of a store opened with `migrations: 'refuse'` on a database that is behind: it
 * names what is pending and how to apply it, since the fix is a step to run, not a retry.
 */
export function pendingMigrationsError({
  database,
  pending,
  applyWith,
}: PendingMigrationsErrorOptions): Error {
  const names = pending.map((migration) => migration.name).join(', ');
  const count = pending.length === 1 ? '1 migration is' : `${pending.length} migrations are`;
  return new Error(
    `keyhook: cannot open ${database}: ${count} pending (${names}) and the store was created with ` +
      `migrations: 'refuse'. Apply them first with ${applyWith}.`,
  );
}

/** What `assertKnownMigrations` compares, and how its errors name the database and the store. */
export interface KnownMigrationsOptions {
  /** The database as people know it, e.g. `the PostgreSQL schema "keyhook"`. */
  database: string;
  /** The store package, named in the advice to upgrade it. */
  packageName: string;
  /** What the database records: version → file name without `.sql`. */
  recorded: ReadonlyMap<number, string>;
  /** What this version of the store ships, in order, named the same way. */
  shipped: readonly PendingMigration[];
}

/**
 * Throws when the database records a migration the store does not ship (a newer release
 * migrated it) or a shipped version under another name: this code and that database disagree,
 * so reading or writing its tables, or migrating it further, could only do harm.
 */
export function assertKnownMigrations({
  database,
  packageName,
  recorded,
  shipped,
}: KnownMigrationsOptions): void {
  const known = new Map(shipped.map((migration) => [migration.version, migration.name]));
  for (const [version, name] of [...recorded].sort(([a], [b]) => a - b)) {
    const expected = known.get(version);
    if (expected === undefined) {
      throw new Error(
        `keyhook: ${database} has migration ${name}, which this version of ${packageName} does not know ` +
          `(it knows up to ${shipped.at(-1)?.name ?? 'no migration'}): a newer release migrated it, so ` +
          'upgrade the package',
      );
    }
    if (expected !== name) {
      throw new Error(`keyhook: ${database} recorded migration ${version} as ${name}, expected ${expected}`);
    }
  }
}

/** How `applyLogged` logs one migration: its context and who else may have applied it. */
export interface LoggedMigration {
  /** The store's `logger` option. */
  logger: Logger;
  /** The migration, named by its file: `{ version: 4, name: '0004_deliveries' }`. */
  migration: PendingMigration;
  /** Where it runs, logged with each line: `{ filename }` or `{ schema }`, never a password. */
  where: object;
  /** Who applied it when the store finds it recorded under its lock: `another connection`. */
  appliedElsewhereBy: string;
}

/**
 * Runs `apply` (which applies one migration under the store's lock, or finds it recorded
 * there and answers false) between a line at its start and one at its end with the duration,
 * both at `info` with `{ ...where, version, name }` (`durationMs` too at the end). Resolves
 * with the migration and its duration when this call applied it, null when another did.
 * Synchronous for a synchronous `apply` (SQLite's), a promise for an asynchronous one.
 */
export function applyLogged(migration: LoggedMigration, apply: () => boolean): AppliedMigration | null;
/** {@inheritDoc (applyLogged:1)} */
export function applyLogged(
  migration: LoggedMigration,
  apply: () => Promise<boolean>,
): Promise<AppliedMigration | null>;
export function applyLogged(
  { logger, migration, where, appliedElsewhereBy }: LoggedMigration,
  apply: () => boolean | Promise<boolean>,
): AppliedMigration | null | Promise<AppliedMigration | null> {
  const { version, name } = migration;
  const context = { ...where, version, name };
  logger.info(context, `applying migration ${name}`);
  const started = performance.now();
  const finish = (ran: boolean): AppliedMigration | null => {
    const durationMs = Math.round(performance.now() - started);
    if (!ran) {
      logger.info({ ...context, durationMs }, `migration ${name} was applied by ${appliedElsewhereBy}`);
      return null;
    }
    logger.info({ ...context, durationMs }, `applied migration ${name} in ${durationMs} ms`);
    return { version, name, durationMs };
  };
  const ran = apply();
  return typeof ran === 'boolean' ? finish(ran) : ran.then(finish);
}
