import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, run, shippedMigrations } from './support.js';

// Under CI=true this throws when Postgres is down, so CI can never skip this suite silently.
const available = await postgresAvailable();

const SHIPPED = shippedMigrations('store-postgres');
const PASSWORD = 'Sup3r-s3cret_pw';

/** The test server's URL with a password in it; trust auth accepts it and ignores it. */
function urlWithPassword(): string {
  const url = new URL(POSTGRES_TEST_URL);
  url.password = PASSWORD;
  return url.href;
}

const schemas: string[] = [];
const admin = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
const freshSchema = () => {
  const schema = uniqueSchemaName('cli');
  schemas.push(schema);
  return schema;
};

async function recorded(schema: string): Promise<string[]> {
  const { rows } = await admin.query(
    `SELECT version, name FROM "${schema}".keyhook_migrations ORDER BY version`,
  );
  return rows.map((row) => `${String(row.version).padStart(4, '0')}_${row.name}`);
}

(available ? describe : describe.skip)('keyhook migrate on PostgreSQL', () => {
  beforeAll(assertBuilt);
  afterAll(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });

  it('applies every migration to a new schema, printing each with its duration; a second run applies nothing', async () => {
    const schema = freshSchema();
    const where = `schema "${schema}" of the PostgreSQL database "test" on ${new URL(POSTGRES_TEST_URL).host}`;
    const first = await run(['migrate', '--database', POSTGRES_TEST_URL, '--schema', schema]);
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
    const lines = first.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`Migrating ${where}`);
    expect(lines.slice(1, -1)).toEqual(
      SHIPPED.flatMap((name) => [
        `  applying migration ${name}`,
        expect.stringMatching(`^  applied migration ${name} in \\d+ ms$`),
      ]),
    );
    expect(lines.at(-1)).toMatch(new RegExp(`^Applied ${SHIPPED.length} migrations in \\d+ ms\\.$`));
    expect(await recorded(schema)).toEqual(SHIPPED);

    const second = await run(['migrate', '--database', POSTGRES_TEST_URL, '--schema', schema]);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(`Migrating ${where}\nNothing to apply: ${where} is up to date.\n`);
  });

  it('--dry-run lists what is pending and creates nothing, not even the schema', async () => {
    const schema = freshSchema();
    const { code, stdout } = await run([
      'migrate',
      '--database',
      POSTGRES_TEST_URL,
      '--schema',
      schema,
      '--dry-run',
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(
      new RegExp(`^${SHIPPED.length} migrations pending for schema "${schema}" of the PostgreSQL database`),
    );
    expect(stdout).toContain(SHIPPED.map((name) => `  ${name}\n`).join(''));
    const { rowCount } = await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    expect(rowCount).toBe(0);
  });

  it('reads DATABASE_URL when --database is absent, and never prints the password in it', async () => {
    const schema = freshSchema();
    const { code, stdout, stderr } = await run(['migrate', '--schema', schema], {
      env: { DATABASE_URL: urlWithPassword() },
    });
    expect(code).toBe(0);
    expect(await recorded(schema)).toEqual(SHIPPED);
    expect(stdout + stderr).not.toContain(PASSWORD);
  });

  it('fails with exit 1 and one line, without the password, when the server is out of reach', async () => {
    const url = `postgres://postgres:${PASSWORD}@127.0.0.1:1/test`;
    for (const args of [
      ['migrate', '--database', url],
      ['migrate', '--database', url, '--dry-run'],
    ]) {
      const { code, stdout, stderr } = await run(args);
      expect(code).toBe(1);
      expect(stderr).toMatch(/^keyhook migrate: PostgreSQL is unreachable\. \(.*ECONNREFUSED.*\)\n$/);
      expect(stdout + stderr).not.toContain(PASSWORD);
    }
  });

  it('fails with exit 1, without the password, when the database does not exist', async () => {
    const url = new URL(urlWithPassword());
    url.pathname = '/keyhook_no_such_database';
    const { code, stdout, stderr } = await run(['migrate', '--schema', freshSchema()], {
      env: { DATABASE_URL: url.href },
    });
    expect(code).toBe(1);
    expect(stderr).toBe('keyhook migrate: database "keyhook_no_such_database" does not exist\n');
    expect(stdout + stderr).not.toContain(PASSWORD);
  });

  it('never echoes a URL given without --database, nor a bad schema name with it', async () => {
    const stray = await run(['migrate', urlWithPassword()]);
    expect(stray.code).toBe(2);
    expect(stray.stdout + stray.stderr).not.toContain(PASSWORD);
    for (const schema of ['Not-Valid', 'pg_keyhook', '1st']) {
      const badSchema = await run(['migrate', '--database', urlWithPassword(), '--schema', schema]);
      expect(badSchema.code).toBe(2);
      // The store's check, before anything is printed.
      expect(badSchema.stdout).toBe('');
      expect(badSchema.stderr).toMatch(
        /^keyhook migrate: Invalid Postgres schema name .* \(keyhook migrate --help\)\n$/,
      );
      expect(badSchema.stderr).not.toContain(PASSWORD);
    }
  });
});
