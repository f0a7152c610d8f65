import { describe, expect, it } from 'vitest';
import { loadMigrations } from '../src/migration-driver.js';

/**
 * The checksum of every released migration. A database records a migration's checksum when it
 * runs the file, and refuses to open once the file differs (core's runMigrations), so changing a
 * released file, even a comment, would lock out every database it ran on. A new migration adds
 * its line here in the commit that adds it; a line is never changed.
 */
const RELEASED = [
  ['0001_api_keys', 'a1efcb23d20b94b764f603f799add4cada598a19bb2410ea72f5e40e99cfaca4'],
  ['0002_key_change_notify', 'a54bfadecc2747726bc0e27c7546bcdab9b2c4af478578d8418dd2c4d016ecef'],
  ['0003_webhooks', 'fbfe248828c8b908d09fa99351e4d9a8aa9349a61bf63a1cd9cb2c0029c9048f'],
  ['0004_deliveries', '0b3f1117c30161d9e15440365ff4ac727f6b38b4e4d6e9861a356677e070c73c'],
  ['0005_retention', '1c99ee2c5e18b90ccd532f9bddc44e95d5a5f5c6a91cb783686024ac849c19ae'],
  ['0006_deliveries_by_event', '172699d1b2d6e3c77f1efab880395fa7574a628d79828d5589bcbe58b2901581'],
  ['0007_key_rate_limits', '7b39159acdc40b588ec669453950f68efd35cb9902af016d61f898077de71d19'],
  ['0008_webhook_previous_secret', 'f2fc52dde0c81a12af26b015ee0b935eaaa2248a12c6abe55d4f52bf69a8c947'],
  ['0009_failed_deliveries', 'c605daabc512c5d1de2f6f93703cfa10894fb4bb8ce5ee3653de845e91042dee'],
  ['0010_delivery_telemetry', '4fcd50c10bd0f3e3be8f5c2b9ee7432b775117ab65b2baba631ef47322293ec7'],
  ['0011_twin_claims', '6006613d9c75b11eeee1047fc2b8044fff433ca8ae812b348147655b78f42cd1'],
  ['0012_portal_sessions', '527999a0ef6d159cb714a4802870d09fdd3e7a40605fa0d762f6d217d88ac694'],
  ['0013_signature_scheme', '32ce21a9c7d623546e241d5930bbba2e7d02c36bc90c5844e28c4e46477f6bd0'],
  ['0014_endpoint_rate', '3b85348c6885ff5f2397234dcd6f4bc02fea1102c0a30353890864eb25475656'],
  ['0015_event_feed', '7e0e3bc80f6a582803596755827d617795cee9e311737fb884c22db1b4201d3b'],
  ['0016_gone_and_public_key', '94ce51f0b5902b0b98e2bdfe3342a254540a39d7ab7679d8d6955e1325519a53'],
  ['0017_rate_limit_by_host', '7583992d4bf71d40fb572f113715d044f719171f5097d628f6995e062574a695'],
  [
    '0018_webhook_disabled_at_and_description',
    'fadcc91779df13ddbafad105908142c9472ec9c0f61878b0415dfab016bd1424',
  ],
  [
    '0019_deliveries_without_foreign_keys',
    '131a16578eb81628edd667d94e3a6d838596fd374607f7aaa6f80a9be4d04375',
  ],
];

describe('released migrations', () => {
  it('are unchanged, and every shipped migration is listed', async () => {
    expect((await loadMigrations()).map((migration) => [migration.name, migration.checksum])).toEqual(
      RELEASED,
    );
  });
});
