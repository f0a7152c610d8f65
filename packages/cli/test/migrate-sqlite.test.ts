import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { keyRecord } from '@keyhook/store-conformance';
import { createSqliteStore } from '@keyhook/store-sqlite';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, run, shippedMigrations } from './support.js';

beforeAll(assertBuilt);

const root = mkdtempSync(join(tmpdir(), 'keyhook-cli-sqlite-'));
let count = 0;
const freshFile = () => join(root, `db-${++count}.db`);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const SHIPPED = shippedMigrations('store-sqlite');

function recorded(filename: string): string[] {
  const raw = new Database(filename, { readonly: true });
  try {
    return raw.prepare('SELECT name FROM keyhook_migrations ORDER BY version').pluck().all() as string[];
  } finally {
    raw.close();
  }
}

describe('keyhook migrate on a SQLite file', () => {
  it('applies every migration to a new file, printing each with its duration; a second run applies nothing', async () => {
    const filename = freshFile();
    const first = await run(['migrate', '--database', filename]);
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
    const lines = first.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`Migrating the SQLite database at ${filename}`);
    expect(lines.slice(1, -1)).toEqual(
      SHIPPED.flatMap((name) => [
        `  applying migration ${name}`,
        expect.stringMatching(`^  applied migration ${name} in \\d+ ms$`),
      ]),
    );
    expect(lines.at(-1)).toMatch(new RegExp(`^Applied ${SHIPPED.length} migrations in \\d+ ms\\.$`));
    expect(recorded(filename)).toEqual(SHIPPED);

    const second = await run(['migrate', '--database', filename]);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(
      `Migrating the SQLite database at ${filename}\nNothing to apply: the SQLite database at ${filename} is up to date.\n`,
    );
  });

  it('--dry-run lists what is pending and applies nothing: a new file is not even created', async () => {
    const filename = freshFile();
    const { code, stdout } = await run(['migrate', '--database', filename, '--dry-run']);
    expect(code).toBe(0);
    expect(stdout).toBe(
      `${SHIPPED.length} migrations pending for the SQLite database at ${filename}:\n` +
        SHIPPED.map((name) => `  ${name}\n`).join('') +
        'Nothing was applied (--dry-run).\n',
    );
    expect(existsSync(filename)).toBe(false);

    await run(['migrate', '--database', filename]);
    const after = await run(['migrate', '--database', filename, '--dry-run']);
    expect(after.stdout).toBe(`Nothing pending: the SQLite database at ${filename} is up to date.\n`);
  });

  it("is the release step before a store opened with migrations: 'refuse'", async () => {
    const filename = freshFile();
    expect(() => createSqliteStore({ filename, migrations: 'refuse' })).toThrow(/npx keyhook migrate/);
    expect((await run(['migrate', '--database', filename])).code).toBe(0);
    const store = createSqliteStore({ filename, migrations: 'refuse' });
    await expect(store.insertApiKey(keyRecord())).resolves.toBe('inserted');
    await store.close();
  });

  it('reads DATABASE_URL when --database is absent', async () => {
    const filename = freshFile();
    const { code } = await run(['migrate'], { env: { DATABASE_URL: filename } });
    expect(code).toBe(0);
    expect(recorded(filename)).toEqual(SHIPPED);
  });

  it('fails with exit 1 and one line naming the file when it cannot be opened', async () => {
    const filename = join(root, 'no-such-directory', 'x.db');
    const { code, stderr } = await run(['migrate', '--database', filename]);
    expect(code).toBe(1);
    expect(stderr).toBe(
      `keyhook migrate: cannot open the SQLite database at ${filename}: Cannot open database because the directory does not exist\n`,
    );
  });

  it('exits 2 on bad usage: no database, --schema with a file, a URL of another scheme', async () => {
    const none = await run(['migrate']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/pass --database <postgres:\/\/…\|path\/to\/file\.db>, or set DATABASE_URL/);
    const schema = await run(['migrate', '--database', freshFile(), '--schema', 'app']);
    expect(schema.code).toBe(2);
    expect(schema.stderr).toMatch(/--schema applies to PostgreSQL only/);
    const mysql = await run(['migrate', '--database', 'mysql://root:Pa55word@db/app']);
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toMatch(/a mysql:\/\/ URL is not a database keyhook's stores open/);
    expect(mysql.stderr).not.toContain('Pa55word');
  });

  it('refuses anything that starts like a URL, with or without //, and never prints its password', async () => {
    const cwd = mkdtempSync(join(root, 'cwd-'));
    for (const database of [
      'postgres:/u:S3cretPw@127.0.0.1:1/db',
      'postgres:u:S3cretPw@127.0.0.1:1/db',
      'PostgreSQL:/u:S3cretPw@127.0.0.1:1/db',
      'mysql:u:S3cretPw@db/app',
      'sqlite:./u:S3cretPw@x.db',
      'file:x.db',
    ]) {
      const { code, stdout, stderr } = await run(['migrate', '--database', database], { cwd });
      expect(code, database).toBe(2);
      expect(stdout).toBe('');
      expect(stderr, database).toMatch(
        /^keyhook migrate: (--database starts with postgres(ql)?:\/? but is not a postgres:\/\/ URL|a \w+: URL is not a database keyhook's stores open)/i,
      );
      expect(stderr).not.toContain('S3cretPw');
    }
    // None was taken for a file name: no file was created.
    expect(readdirSync(cwd)).toEqual([]);
  });

  it('takes a Windows drive path for a file, not for a URL of scheme c', async () => {
    for (const filename of ['C:\\data\\keyhook.db', 'c:/data/keyhook.db']) {
      const { code, stdout } = await run(['migrate', '--database', filename, '--dry-run'], { cwd: root });
      expect(code).toBe(0);
      expect(stdout).toMatch(
        `${SHIPPED.length} migrations pending for the SQLite database at ${filename}:\n`,
      );
    }
  });

  it('scrubs a user:password@ in a file path from what it prints', async () => {
    const filename = join(root, 'u:S3cretPw@host.db');
    const shown = join(root, 'u:***@host.db');
    const dry = await run(['migrate', '--database', filename, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(`${SHIPPED.length} migrations pending for the SQLite database at ${shown}:\n`);
    const applied = await run(['migrate', '--database', filename]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toMatch(`Migrating the SQLite database at ${shown}\n`);
    expect(dry.stdout + dry.stderr + applied.stdout + applied.stderr).not.toContain('S3cretPw');
  });

  it('fails with exit 1 on a database of a newer release, saying so once, without a doubled keyhook: prefix', async () => {
    const filename = freshFile();
    expect((await run(['migrate', '--database', filename])).code).toBe(0);
    const raw = new Database(filename);
    raw
      .prepare('INSERT INTO keyhook_migrations (version, name, applied_at) VALUES (?, ?, ?)')
      .run(999, '0999_future', Date.now());
    raw.close();
    const refusal =
      `the database has migration 0999_future, which this version of @keyhook/store-sqlite does not know ` +
      `(it knows up to ${SHIPPED.at(-1)}): a newer release migrated it, so upgrade the package\n`;
    const applied = await run(['migrate', '--database', filename]);
    expect(applied.code).toBe(1);
    expect(applied.stderr).toBe(
      `keyhook migrate: cannot open the SQLite database at ${filename}: ${refusal}`,
    );
    const dry = await run(['migrate', '--database', filename, '--dry-run']);
    expect(dry.code).toBe(1);
    expect(dry.stderr).toBe(`keyhook migrate: cannot open the SQLite database at ${filename}: ${refusal}`);
  });
});
