import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { generateEncryptionKey } from '@keyhook/core';
import type { ServerConfig } from './config.js';

export const DEV_KEY_FILE = 'keyhook-encryption.key';

/**
 * The master key for secrets at rest. Production takes KEYHOOK_ENCRYPTION_KEY (config refuses
 * to start without it). Development generates one on first start and keeps it beside the
 * SQLite file (or in ./data for Postgres), so webhook secrets still open after a restart.
 */
export async function encryptionKeyFor(config: ServerConfig, cwd = process.cwd()): Promise<Buffer | string> {
  if (config.encryptionKey) return config.encryptionKey;
  if (config.production) throw new Error('KEYHOOK_ENCRYPTION_KEY is required in production');
  const dir =
    config.store.kind === 'sqlite' ? path.dirname(config.store.filename) : path.resolve(cwd, 'data');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, DEV_KEY_FILE);
  try {
    // `wx`: of two instances starting together, one writes and the other reads what it wrote.
    writeFileSync(file, `${generateEncryptionKey()}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readFileSync(file, 'utf8').trim();
}
