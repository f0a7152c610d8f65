import {
  type MigrationDriver,
  type MigrationFile,
  migrationChecksum,
  type RecordedMigration,
  runMigrations,
  silentLogger,
} from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';

const file = (version: number, name: string): MigrationFile => {
  const sql = `-- ${name}\n`;
  return {
    version,
    name: `${String(version).padStart(4, '0')}_${name}`,
    sql,
    checksum: migrationChecksum(sql),
  };
};
const shipped = [file(1, 'one'), file(2, 'two')];
const recordOf = (migration: MigrationFile): RecordedMigration => ({
  version: migration.version,
  name: migration.name,
  checksum: migration.checksum,
});

/**
 * A database held in an array, as a driver sees it; `meanwhile` runs inside the lock of each
 * apply, before the recorded list is read again, as another instance's work would land.
 */
function arrayDriver(recorded: RecordedMigration[], meanwhile: () => void = () => {}): MigrationDriver<true> {
  return {
    database: 'the test database',
    packageName: '@keyhook/test',
    where: {},
    appliedElsewhereBy: 'another instance',
    readRecorded: () => [...recorded],
    applyOne: (migration) => {
      meanwhile();
      if (recorded.some((entry) => entry.version === migration.version)) return false;
      recorded.push(recordOf(migration));
      return true;
    },
    recordChecksums: () => {},
  };
}

describe('runMigrations', () => {
  it('refuses, after its own turn, a database a newer instance migrated further while it waited for the lock', () => {
    const recorded = [recordOf(shipped[0]!)];
    // A newer release, in a rolling deploy, applies 2 and its own 3 first.
    const newer = arrayDriver(recorded, () => {
      if (recorded.length === 1) recorded.push(recordOf(shipped[1]!), recordOf(file(3, 'three')));
    });
    expect(() => runMigrations(newer, shipped, silentLogger)).toThrow(
      'keyhook: the test database has migration 0003_three, which this version of @keyhook/test does not know (it knows up to 0002_two)',
    );
  });

  it('waits for a driver that answers with a thenable of its own (not a native Promise)', async () => {
    const recorded: RecordedMigration[] = [];
    const order: string[] = [];
    const thenable = <T>(value: T, label: string): PromiseLike<T> => ({
      // biome-ignore lint/suspicious/noThenProperty: a thenable is the point of this case
      then: (resolve, reject) =>
        new Promise<T>((settle) => setImmediate(() => settle(value)))
          .then((settled) => {
            order.push(label);
            return settled;
          })
          .then(resolve, reject),
    });
    const driver = {
      ...arrayDriver(recorded),
      readRecorded: () => thenable([...recorded], 'read'),
      applyOne: (migration: MigrationFile) => {
        recorded.push(recordOf(migration));
        return thenable(true, `apply ${migration.version}`);
      },
      recordChecksums: () => thenable(undefined, 'sums'),
    } as unknown as MigrationDriver<false>;
    const applied = await runMigrations(driver, shipped, silentLogger);
    expect(applied.map((migration) => migration.name)).toEqual(['0001_one', '0002_two']);
    expect(order).toEqual(['read', 'apply 1', 'apply 2', 'read']);
  });
});

describe('what runMigrations logs', () => {
  const recording = () => {
    const lines: { level: string; context: object; message: string }[] = [];
    const at = (level: string) => (context: object, message: string) => {
      lines.push({ level, context, message });
    };
    return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  };

  it('one line at info per migration applied, with its duration; its start, where and checksum at debug', () => {
    const logger = recording();
    const driver = { ...arrayDriver([]), where: { filename: '/data/k.db' } };
    const applied = runMigrations(driver, shipped, logger);
    expect(logger.lines.filter((line) => line.level === 'info')).toEqual(
      applied.map(({ name, durationMs }) => ({
        level: 'info',
        context: { name, durationMs },
        message: `applied migration ${name} in ${durationMs} ms`,
      })),
    );
    expect(logger.lines.filter((line) => line.level === 'debug')).toEqual(
      shipped.map(({ version, name, checksum }) => ({
        level: 'debug',
        context: { filename: '/data/k.db', version, name, checksum },
        message: `applying migration ${name}`,
      })),
    );
    expect(logger.lines).toHaveLength(2 * shipped.length);
  });

  it('a logger without debug gets only the info lines', () => {
    const lines: string[] = [];
    const logger = {
      info: (_context: object, message: string) => void lines.push(message),
      warn: () => {},
      error: () => {},
    };
    const applied = runMigrations(arrayDriver([]), shipped, logger);
    expect(lines).toEqual(
      applied.map(({ name, durationMs }) => `applied migration ${name} in ${durationMs} ms`),
    );
  });

  it('a failure at error, with where, the migration and the reason', () => {
    const logger = recording();
    const driver = {
      ...arrayDriver([]),
      where: { schema: 'keyhook' },
      applyOne: () => {
        throw new Error('syntax error at or near "NOT"');
      },
    };
    expect(() => runMigrations(driver, shipped, logger)).toThrow('syntax error');
    expect(logger.lines.map((line) => line.level)).toEqual(['debug', 'error']);
    expect(logger.lines[1]).toMatchObject({
      context: { schema: 'keyhook', version: 1, name: '0001_one', err: 'syntax error at or near "NOT"' },
      message: 'migration 0001_one failed and was rolled back',
    });
  });
});
