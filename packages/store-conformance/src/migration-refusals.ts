import { describe, expect, it } from 'vitest';
import type { StoreHarness, SuiteContext } from './store-harness.js';

/**
 * Core's migration runner, through a store: opening a database whose recorded migrations
 * disagree with the store's files is refused, naming the migration and why, before anything is
 * read or written. A store without migrations (the memory store) has nothing to refuse.
 */
export function migrationRefusalCases(ctx: SuiteContext, harness: StoreHarness): void {
  const migrations = harness.migrations;
  if (migrations === undefined) return;

  describe('migrations that disagree with the store', () => {
    it('a database a newer release migrated is refused at open, naming its migration and the newest known', async () => {
      await migrations.record(ctx.store, 9999, '9999_from_the_future');
      await expect(harness.createPeer(ctx.store)).rejects.toThrow(
        /has migration 9999_from_the_future, which this version of @keyhook\/store-\w+ does not know \(it knows up to \d{4}_\w+\)/,
      );
    });

    it('a migration edited after it ran is refused at open, naming its file', async () => {
      await migrations.setChecksum(ctx.store, 1, 'edited');
      await expect(harness.createPeer(ctx.store)).rejects.toThrow(
        /migration 0001_api_keys of @keyhook\/store-\w+ was edited after it ran/,
      );
    });
  });
}
