import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiKeys, isKeyhookError, systemClock } from '@keyhook/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore, DEFAULT_CHANGE_CHECK_INTERVAL_MS } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'keyhook-sqlite-xproc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a revoke by another process on the same file, against a warm verified-key cache', () => {
  it(`is refused within the change-check bound (${DEFAULT_CHANGE_CHECK_INTERVAL_MS} ms), measured`, async () => {
    const filename = join(dir, 'shared.db');
    const store = createSqliteStore({ filename });
    const keys = new ApiKeys({ store, clock: systemClock, randomBytes: (n) => randomBytes(n) });
    const child = fork(new URL('./fixtures/revoker.mjs', import.meta.url), [filename]);
    const next = () => new Promise<unknown>((resolve) => child.once('message', resolve));
    try {
      expect(await next()).toBe('ready');
      const windows: number[] = [];
      for (let cycle = 0; cycle < 30; cycle++) {
        const { key, secret } = await keys.create('tenant_a', {
          name: `cycle ${cycle}`,
          scopes: ['items:read'],
        });
        await keys.verify(secret); // now cached in this process
        child.send(key.id);
        expect(await next()).toBe('revoked');
        const start = performance.now();
        let served = 0;
        for (;;) {
          const code = await keys.verify(secret).then(
            () => 'ok',
            (error: unknown) => (isKeyhookError(error) ? error.code : 'thrown'),
          );
          if (code === 'key_revoked') break;
          expect(code).toBe('ok');
          served++;
          expect(performance.now() - start).toBeLessThan(1000);
        }
        windows.push(performance.now() - start);
        if (served > 0) expect(performance.now() - start).toBeLessThan(50);
      }
      windows.sort((a, b) => a - b);
      console.log(
        `another process's revoke refused after: median ${windows[15]!.toFixed(3)} ms, max ${windows.at(-1)!.toFixed(3)} ms`,
      );
      expect(windows.at(-1)!).toBeLessThan(50);
    } finally {
      child.kill();
      await store.close();
    }
  });
});
