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
