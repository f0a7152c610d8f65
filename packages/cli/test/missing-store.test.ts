import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, run } from './support.js';

// An install of the CLI and core without any store package: the bin copied into a directory
// whose node_modules holds @keyhook/core alone.
const root = mkdtempSync(join(tmpdir(), 'keyhook-cli-alone-'));
const bin = cliBinIn(join(root, 'app'));
// And one whose store packages are as 0.1.0 shipped them: no migrate(), no pendingMigrations().
const oldApp = join(root, 'old-app');
const oldBin = cliBinIn(oldApp);

beforeAll(() => {
  assertBuilt();
  installCli(bin);
  installCli(oldBin);
  installOldStore(oldApp, 'store-sqlite', 'createSqliteStore');
  installOldStore(oldApp, 'store-postgres', 'createPostgresStore');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function cliBinIn(app: string): string {
  return join(app, 'node_modules', '@keyhook', 'cli', 'dist', 'bin.js');
}

/** Copies the built bin and its package.json to `target`, with core linked beside the CLI. */
function installCli(target: string): void {
  mkdirSync(join(target, '..'), { recursive: true });
  copyFileSync(BIN, target);
  copyFileSync(
    fileURLToPath(new URL('../package.json', import.meta.url)),
    join(target, '..', '..', 'package.json'),
  );
  const core = fileURLToPath(new URL('../../core', import.meta.url));
  symlinkSync(core, join(target, '..', '..', '..', 'core'), 'dir');
}

/** A store package as 0.1.0 shipped it: it opens a store, and has no migrate(). */
function installOldStore(app: string, name: string, factory: string): void {
  const dir = join(app, 'node_modules', '@keyhook', name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: `@keyhook/${name}`, version: '0.1.0', type: 'module', exports: './index.js' }),
  );
  writeFileSync(
    join(dir, 'index.js'),
    `export function ${factory}() {}\nexport const DEFAULT_SCHEMA = 'keyhook';\n`,
  );
}

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

describe('keyhook migrate with a store package older than migrate()', () => {
  it('says to upgrade the store package, for a SQLite file and for a postgres:// URL', async () => {
    const cases = [
      [join(root, 'x.db'), '@keyhook/store-sqlite'],
      ['postgres://u:pw@127.0.0.1:1/app', '@keyhook/store-postgres'],
    ] as const;
    for (const [database, store] of cases) {
      for (const dryRun of [[], ['--dry-run']]) {
        const { code, stdout, stderr } = await run(['migrate', '--database', database, ...dryRun], {
          bin: oldBin,
          cwd: root,
        });
        expect(code).toBe(1);
        expect(stdout).toBe('');
        expect(stderr).toBe(
          `keyhook migrate: the installed ${store} has no migrate(): upgrade ${store} to a version with ` +
            'migrate() (0.2.0 or later)\n',
        );
      }
    }
  });
});
