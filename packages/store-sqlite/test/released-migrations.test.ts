import { describe, expect, it } from 'vitest';
import { loadMigrations } from '../src/migration-driver.js';

/**
 * The checksum of every released migration. A database records a migration's checksum when it
 * runs the file, and refuses to open once the file differs (core's runMigrations), so changing a
 * released file, even a comment, would lock out every database it ran on. A new migration adds
 * its line here in the commit that adds it; a line is never changed.
 */
const RELEASED = [
  ['0001_api_keys', '863891cb9f92788e5f6ab1012aa00e88ee87ad616f19d3fa5b39935aba786d7c'],
  ['0002_webhooks', 'b017802b527f1108bc11a95c06286084a03dd83b9d99588f1791847f87cea529'],
  ['0003_deliveries', '503b67be8013471110bac5c8dcd0ffbcb9eec4ea6b0e748a291c745334cba07f'],
  ['0004_deliveries_without_rowid', '91e42a735fe0e130e46a561e3b64301d46aeacf9e54ace3ec037e84dec48757f'],
  ['0005_retention', '12bce45581fa547c2b93d8c9c320b1fbe96c74c8e25ab7e5c0994671bb5b6f85'],
  ['0006_key_rate_limits', 'f8a7afc2c8220bbc73bd79a3002dfc506b382c9a5a6da7441769967744b3f26c'],
  ['0007_webhook_previous_secret', 'ef4dfa9f90a5e73fcf751243200342d6a77ef3d8ecb37e91c4247c81c1656503'],
  ['0008_failed_deliveries', '615d8162a34cfb48651bcdf3ade09ea22d0768664c5dc4912d2f1c560d494221'],
  ['0009_delivery_telemetry', 'd1fe9df160d334d79d6d59d3dfa933f7c9287b621b03b33ff58010663f205856'],
  ['0010_twin_claims', '390aa3aafa860146e2e5948c2043e8a5f894a5594450db518160c19b6b432e81'],
  ['0011_portal_sessions', '51bb73534b7f59697954cb29ef985274c0dae8d462fbaddfaab9e3b9116c8df3'],
  ['0012_signature_scheme', '5933e9f7e6b35f341eac42082f22c1af56737ca4403995a1679859f943d362c6'],
  ['0013_endpoint_rate', 'c6c6f72faa181f03cb535aeb752363fd117df2e8832c6d78bbe231643743718d'],
  ['0014_event_feed', 'f43734064bd65fa7fa4aff65a9b0711f9cebb1620c146292a62927f4fd985222'],
  ['0015_gone_and_public_key', '260bed3b6144148129e5676ab373eaa5bdc5f3c54e72824461fe343f7329a378'],
  ['0016_rate_limit_by_host', '3b9ebd209acb37bae2e25a2222287720874a1609a35c432deca252b192337407'],
  [
    '0017_webhook_disabled_at_and_description',
    '6fd947e96e9e6be88a2b180598912bf177f617b4f8d9c55e077b8eee045c41e1',
  ],
];

describe('released migrations', () => {
  it('are unchanged, and every shipped migration is listed', () => {
    expect(loadMigrations().map((migration) => [migration.name, migration.checksum])).toEqual(RELEASED);
  });
});
