import { describe, expect, it } from 'vitest';
import { stagingMigrations } from '../src/data-plane/migrate.js';

/**
 * The checksum of every released migration. A database records a migration's checksum when it
 * runs the file, and refuses to open once the file differs (core's runMigrations), so changing a
 * released file, even a comment, would lock out every database it ran on. A new migration adds
 * its line here in the commit that adds it; a line is never changed.
 */
const RELEASED = {
  sqlite: [
    ['0001_staging', '3ad4b9f57431194292ee6f6c3f4cd7763a18fbee7f958799019fd5eb40ae31b7'],
    ['0002_chunked_writes', 'f4428c69268ba773550c867d49054a5d66c718d3dd30f6b9f6383dab5abbacb1'],
    ['0003_idempotency_keys', '0bce94d06802316b0c1cf7ca7c39949f632ed2f88fbc9abe7c441b44ed457f1a'],
  ],
  postgres: [
    ['0001_staging', '4597efee76c79f75569b092193079443245eeb248534fff66b74698d3fd1f913'],
    ['0002_chunked_writes', '5a61ab23b87c2ace71cfe924e066c6e0b9a9517eba5b1226ccfe55d062cd4927'],
    ['0003_idempotency_keys', '5485e94f7a2ad218eb67b94a41a5ec31ac7576e71db7fed39140b63d1a513e5e'],
  ],
};

describe('released staging migrations', () => {
  it.each(['sqlite', 'postgres'] as const)(
    '%s: unchanged, and every shipped migration is listed',
    (dialect) => {
      expect(stagingMigrations(dialect).map((migration) => [migration.name, migration.checksum])).toEqual(
        RELEASED[dialect],
      );
    },
  );
});
