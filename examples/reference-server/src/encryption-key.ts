import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { generateEncryptionKey } from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import type { ServerConfig } from './config.js';

export const DEV_KEY_FILE = 'keyhook-encryption.key';

/**
 * The development key file is gone while the database holds values sealed with the key it
 * held: a new key could open none of them (every stored idempotent answer would replay as a
 * 500, every delivery would fail to sign), so the server refuses to start instead.
 */
export class DevEncryptionKeyMissingError extends Error {
  override readonly name = 'DevEncryptionKeyMissingError';
  constructor(
    readonly file: string,
    config: ServerConfig,
  ) {
    const reset =
      config.store.kind === 'sqlite'
        ? `delete the development database ${config.store.filename} (with its -wal and -shm files)`
        : `drop the development schema "${config.store.schema}" (DROP SCHEMA "${config.store.schema}" CASCADE)`;
    super(
      [
        `The development encryption key file ${file} is missing, but the database already holds`,
        'values sealed with the key it held (webhook signing secrets, stored Idempotency-Key answers).',
        'A new key could not open them, so none is generated. Do one of these, then start again:',
        `  - restore ${file} (from a backup, or the checkout or volume it was in);`,
        '  - or set KEYHOOK_ENCRYPTION_KEY to the key that sealed the data (base64, 32 bytes);',
        `  - or, if this data is disposable, reset it: ${reset}. This deletes every API key, webhook and`,
        '    delivery in it; the next start generates a new key file.',
      ].join('\n'),
    );
  }
}

/**
 * The master key for secrets at rest. Production takes KEYHOOK_ENCRYPTION_KEY (config refuses
 * to start without it). Development generates one on first start and keeps it in
 * `config.dataDir` (beside the SQLite file, or ./data for Postgres), so webhook secrets still
 * open after a restart. A key is generated only for a database without sealed values: a lost
 * key file over existing data is a DevEncryptionKeyMissingError, never a silent new key.
 */
export async function encryptionKeyFor(
  config: ServerConfig,
  store: Pick<Store, 'holdsSealedValues'>,
): Promise<Buffer | string> {
  if (config.encryptionKey) return config.encryptionKey;
  if (config.production) throw new Error('KEYHOOK_ENCRYPTION_KEY is required in production');
  const file = path.join(config.dataDir, DEV_KEY_FILE);
  const kept = readKeyFile(file);
  if (kept !== undefined) return kept;
  if (await store.holdsSealedValues()) throw new DevEncryptionKeyMissingError(file, config);
  await mkdir(config.dataDir, { recursive: true });
  try {
    // `wx`: of two instances starting together, one writes and the other reads what it wrote.
    writeFileSync(file, `${generateEncryptionKey()}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readFileSync(file, 'utf8').trim();
}

function readKeyFile(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
