import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, run } from './support.js';

// An install of the CLI and core without any store package: the bin copied into a directory
// whose node_modules holds @keyhook/core alone.
const root = mkdtempSync(join(tmpdir(), 'keyhook-cli-alone-'));
const bin = join(root, 'app', 'node_modules', '@keyhook', 'cli', 'dist', 'bin.js');

beforeAll(() => {
  assertBuilt();
  mkdirSync(join(bin, '..'), { recursive: true });
  copyFileSync(BIN, bin);
  copyFileSync(
    fileURLToPath(new URL('../package.json', import.meta.url)),
    join(bin, '..', '..', 'package.json'),
  );
  const core = fileURLToPath(new URL('../../core', import.meta.url));
  symlinkSync(core, join(root, 'app', 'node_modules', '@keyhook', 'core'), 'dir');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('keyhook migrate without the store package', () => {
  it('says which package to install for a SQLite file', async () => {
    const { code, stderr } = await run(['migrate', '--database', join(root, 'x.db')], { bin, cwd: root });
    expect(code).toBe(1);
    expect(stderr).toBe(
      'keyhook migrate: @keyhook/store-sqlite is not installed. Install it in your app: ' +
        'npm install @keyhook/store-sqlite better-sqlite3\n',
    );
  });

  it('says which package to install for a postgres:// URL', async () => {
    const { code, stderr } = await run(['migrate', '--database', 'postgres://u:pw@127.0.0.1:1/app'], {
      bin,
      cwd: root,
    });
    expect(code).toBe(1);
    expect(stderr).toBe(
      'keyhook migrate: @keyhook/store-postgres is not installed. Install it in your app: ' +
        'npm install @keyhook/store-postgres pg\n',
    );
  });

  it('still runs the commands that need no store', async () => {
    const { code, stdout } = await run(['generate-encryption-key'], { bin, cwd: root });
    expect(code).toBe(0);
    expect(Buffer.from(stdout.trim(), 'base64')).toHaveLength(32);
  });
});
