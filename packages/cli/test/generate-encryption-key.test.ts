import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createKeyhook } from '@keyhook/core';
import { createSqliteStore } from '@keyhook/store-sqlite';
import { TEST_CATALOG } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, run } from './support.js';

beforeAll(assertBuilt);

const root = mkdtempSync(join(tmpdir(), 'keyhook-cli-key-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Builds a keyhook on a persistent store, which refuses to start without a usable encryptionKey. */
async function startWith(encryptionKey: string): Promise<void> {
  const store = createSqliteStore({ filename: join(root, `${crypto.randomUUID()}.db`) });
  try {
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store,
      adminSession: { secret: 'an-admin-session-secret-of-32-bytes!' },
      encryptionKey,
    });
    await keyhook.close();
  } finally {
    await store.close();
  }
}

describe('keyhook generate-encryption-key', () => {
  it('prints only a new base64 key of 32 bytes, each time another', async () => {
    const first = await run(['generate-encryption-key']);
    const second = await run(['generate-encryption-key']);
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
    expect(first.stdout).toMatch(/^[A-Za-z0-9+/]{43}=\n$/);
    expect(Buffer.from(first.stdout.trim(), 'base64')).toHaveLength(32);
    expect(second.stdout).not.toBe(first.stdout);
  });

  it("prints a key createKeyhook's encryptionKey accepts (and it does refuse a bad one)", async () => {
    const { stdout } = await run(['generate-encryption-key']);
    await expect(startWith(stdout.trim())).resolves.toBeUndefined();
    await expect(startWith('bm90IDMyIGJ5dGVz')).rejects.toThrow(/32 bytes/);
  });
});
