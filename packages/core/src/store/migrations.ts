import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
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

/** One numbered SQL file of a store's (or an app's) migrations, read and summed. */
export interface MigrationFile extends PendingMigration {
  sql: string;
  /** Lowercase hex SHA-256 of the file's text, line endings counted as `\n`. */
  checksum: string;
}

/** What a database records of one applied migration. */
export interface RecordedMigration {
  version: number;
  /** Named by its file, as `PendingMigration.name`: `0004_deliveries`. */
  name: string;
  /** The file's checksum when it ran; null for one a release before checksums recorded. */
  checksum: string | null;
}

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** A migration file's checksum: SHA-256 of its text, so a checkout with CRLF line endings sums the same. */
export function migrationChecksum(sql: string): string {
  return createHash('sha256').update(sql.replaceAll('\r\n', '\n')).digest('hex');
}

/**
 * The numbered migrations in `dir` (`0001_name.sql`, `0002_…`), in order, each with its
 * checksum. The rules every runner shares: a file ending in `.sql` must be named `NNNN_name.sql`
 * (lowercase, digits and `_`), and the versions run 1, 2, 3… with no gap and no twin.
 */
export function readMigrationFiles(dir: string | URL): MigrationFile[] {
  const path = typeof dir === 'string' ? dir : fileURLToPath(dir);
  const files = readdirSync(path)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file): MigrationFile => {
      const match = MIGRATION_FILE.exec(file);
      if (!match)
        throw new Error(`keyhook: migration file ${file} in ${path} is not named like 0001_name.sql`);
      const sql = readFileSync(`${path}/${file}`, 'utf8');
      return { version: Number(match[1]), name: file.slice(0, -4), sql, checksum: migrationChecksum(sql) };
    });
  files.forEach((file, index) => {
    if (file.version !== index + 1) {
      throw new Error(`keyhook: expected migration ${index + 1} in ${path}, found ${file.name}`);
    }
  });
  return files;
}

/** What a runner needs to know of the database it migrates, besides how to execute. */
export interface MigrationTarget {
  /** The database as people know it, e.g. `the PostgreSQL schema "keyhook"`: never a password. */
  database: string;
  /** Who ships the migrations, named in the advice to upgrade it: `@keyhook/store-sqlite`. */
  packageName: string;
}

/**
 * Compares what a database records with the files this code ships, and returns the files not
 * applied yet. Throws, naming the migration and why, when the two disagree, since reading or
 * writing the tables, or migrating further, could only do harm:
 * - the database records a version this code does not ship (a newer release migrated it);
 * - it records a shipped version under another name (a renamed file);
 * - it records a shipped migration with another checksum (its file was edited after it ran).
 */
export function pendingMigrationFiles(
  target: MigrationTarget,
  shipped: readonly MigrationFile[],
  recorded: readonly RecordedMigration[],
): MigrationFile[] {
  const byVersion = new Map(shipped.map((file) => [file.version, file]));
  for (const entry of [...recorded].sort((a, b) => a.version - b.version)) {
    const file = byVersion.get(entry.version);
    if (file === undefined) {
      throw new Error(
        `keyhook: ${target.database} has migration ${entry.name}, which this version of ` +
          `${target.packageName} does not know (it knows up to ${shipped.at(-1)?.name ?? 'no migration'}): ` +
          'a newer release migrated it, so upgrade the package',
      );
    }
    if (file.name !== entry.name) {
      throw new Error(
        `keyhook: ${target.database} recorded migration ${entry.version} as ${entry.name}, expected ${file.name}`,
      );
    }
    if (entry.checksum !== null && entry.checksum !== file.checksum) {
      throw new Error(
        `keyhook: migration ${file.name} of ${target.packageName} was edited after it ran on ` +
          `${target.database} (checksum ${entry.checksum.slice(0, 12)}… recorded, ` +
          `${file.checksum.slice(0, 12)}… in the file): a released migration must never change; ` +
          'restore the file and put the change in a new migration',
      );
    }
  }
  const applied = new Set(recorded.map((entry) => entry.version));
  return shipped.filter((file) => !applied.has(file.version));
}

/**
 * How one database executes migrations: a store's driver, or an app's. It only executes; the
 * rules (order, names, checksums, what is refused) are `runMigrations`'s.
 */
export interface MigrationDriver<Sync extends boolean = boolean> extends MigrationTarget {
  /**
   * Logged with a migration's start (at `debug`) and its failure, e.g. `{ filename }` or
   * `{ schema }`: never a password.
   */
  where: object;
  /** Who applied a migration this call found recorded under its lock: `another instance`. */
  appliedElsewhereBy: string;
  /**
   * What the database records, read without the lock and without writing anything (not even
   * the migrations table): nothing when there is no table yet.
   */
  readRecorded(): Sync extends true ? RecordedMigration[] : Promise<RecordedMigration[]>;
  /**
   * Applies one migration in its own transaction, under a lock every instance takes: reads
   * again whether `file.version` is recorded (false: another instance applied it meanwhile),
   * else runs `file.sql` and records its version, name and checksum (true). A failure rolls
   * the migration back and rejects.
   */
  applyOne(file: MigrationFile): Sync extends true ? boolean : Promise<boolean>;
  /**
   * Records the checksum of migrations the database records without one (applied by a release
   * before checksums), so an edit from now on is noticed.
   */
  recordChecksums(files: readonly MigrationFile[]): Sync extends true ? void : Promise<void>;
}

type Maybe<T> = T | PromiseLike<T>;
/** `next` after `value`: at once for a plain value, after it settles for any thenable (not only a native Promise). */
const then = <T, U>(value: Maybe<T>, next: (value: T) => Maybe<U>): Maybe<U> =>
  isThenable(value) ? Promise.resolve(value).then(next) : next(value);
const isThenable = <T>(value: Maybe<T>): value is PromiseLike<T> =>
  typeof (value as PromiseLike<T> | null)?.then === 'function';

/**
 * Brings a database up to date with `shipped` and returns what this call applied, in order.
 * Refuses (throws, applying nothing) what `pendingMigrationFiles` refuses. Each pending
 * migration is applied by the driver under its lock and logged in one line at `info` once it is
 * applied, with its duration; its start, with the database and the file's checksum, is logged at
 * `debug`, and a failure at `error`. Synchronous for a synchronous driver (SQLite's).
 */
export function runMigrations(
  driver: MigrationDriver<true>,
  shipped: readonly MigrationFile[],
  logger: Logger,
): AppliedMigration[];
/** {@inheritDoc (runMigrations:1)} */
export function runMigrations(
  driver: MigrationDriver<false>,
  shipped: readonly MigrationFile[],
  logger: Logger,
): Promise<AppliedMigration[]>;
export function runMigrations(
  driver: MigrationDriver,
  shipped: readonly MigrationFile[],
  logger: Logger,
): Maybe<AppliedMigration[]> {
  return then(driver.readRecorded(), (recorded) => {
    const pending = pendingMigrationFiles(driver, shipped, recorded);
    const unsummed = shipped.filter((file) =>
      recorded.some((entry) => entry.version === file.version && entry.checksum === null),
    );
    const applied: AppliedMigration[] = [];
    const finish = (): Maybe<AppliedMigration[]> =>
      unsummed.length === 0 ? applied : then(driver.recordChecksums(unsummed), () => applied);
    const step = (index: number): Maybe<AppliedMigration[]> => {
      const file = pending[index];
      if (file === undefined) {
        if (pending.length === 0) return finish();
        // Read again: another instance, of a newer release in a rolling deploy, may have
        // migrated further while this one waited for the lock. Refused the same way.
        return then(driver.readRecorded(), (after) => {
          pendingMigrationFiles(driver, shipped, after);
          return finish();
        });
      }
      return then(applyLogged(driver, file, logger), (done) => {
        if (done) applied.push(done);
        return step(index + 1);
      });
    };
    return step(0);
  });
}

/**
 * One migration, applied and logged; null when another instance applied it. One line at `info`
 * per migration, so a first start is readable: the details (where, the checksum) and the start,
 * which a long rebuild makes worth seeing, are at `debug`.
 */
function applyLogged(
  driver: MigrationDriver,
  file: MigrationFile,
  logger: Logger,
): Maybe<AppliedMigration | null> {
  const { version, name } = file;
  const context = { ...driver.where, version, name };
  logger.debug?.({ ...context, checksum: file.checksum }, `applying migration ${name}`);
  const started = performance.now();
  // A failure is logged, with where and why, then thrown on: the driver rolled it back.
  const failed = (error: unknown): never => {
    const durationMs = Math.round(performance.now() - started);
    const err = error instanceof Error ? error.message : String(error);
    logger.error({ ...context, durationMs, err }, `migration ${name} failed and was rolled back`);
    throw error;
  };
  let applying: Maybe<boolean>;
  try {
    applying = driver.applyOne(file);
  } catch (error) {
    return failed(error);
  }
  if (isThenable(applying)) applying = Promise.resolve(applying).catch(failed);
  return then(applying, (ran) => {
    const durationMs = Math.round(performance.now() - started);
    if (!ran) {
      logger.info({ name, durationMs }, `migration ${name} was applied by ${driver.appliedElsewhereBy}`);
      return null;
    }
    logger.info({ name, durationMs }, `applied migration ${name} in ${durationMs} ms`);
    return { version, name, durationMs };
  });
}
