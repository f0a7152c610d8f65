import path from 'node:path';
import { adminToken, requestJson, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { processLogger, readableLines, renderLine } from '../src/log-format.js';
import { REDACTED } from '../src/log-redaction.js';
import { buildServer } from '../src/server.js';
import { listen } from './client.js';
import { sqliteEnv, tempDir } from './instances.js';
import { ServerProcess } from './server-process.js';

/** A development line: `12:00:01 INFO  applied migration 0001_api_keys in 3 ms`. */
const DEV_LINE = /^\d{2}:\d{2}:\d{2} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S/;
/** The rows of a small terminal: the token and the curl line must be on it at a first start. */
const FIRST_SCREEN = 24;
const ADMIN_CURL = /curl -sS -X POST \S+\/api\/v1\/admin\/keys /;
const PORTAL_LINK = /^ {2}http:\/\/127\.0\.0\.1:\d+\/api\/v1\/portal#token=kpl_[\w-]{43}$/;

/** Every migration the file records, keyhook's then the data plane's, in order. */
function recordedMigrations(filename: string): string[] {
  const db = new Database(filename, { readonly: true });
  try {
    const names = (table: string) =>
      db.prepare(`SELECT name FROM ${table} ORDER BY version`).pluck().all() as string[];
    return [...names('keyhook_migrations'), ...names('staging_migrations')];
  } finally {
    db.close();
  }
}

/** A first start of the real process on a new SQLite file; it is killed and the file removed after `run`. */
async function firstStart(
  env: Record<string, string>,
  run: (server: ServerProcess, filename: string) => Promise<void>,
): Promise<void> {
  const temp = tempDir();
  const filename = path.join(temp.dir, 'keyhook.db');
  const server = new ServerProcess({ ...env, KEYHOOK_SQLITE_PATH: filename });
  try {
    await run(server, filename);
  } finally {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
    temp.remove();
  }
}

describe('one log stream: node dist/main.js', () => {
  it('development, first start: readable lines, the migrations in one, the banner on the first screen, the portal link at its end', () =>
    firstStart({}, async (server, filename) => {
      await server.waitFor(new RegExp(`${ADMIN_CURL.source}.*\\n`), 'the curl line');

      const lines = server.stdout.split('\n');
      const curlAt = lines.findIndex((line) => ADMIN_CURL.test(line));
      expect(curlAt, server.stdout).toBeLessThan(FIRST_SCREEN);
      // The banner opens with an empty line; everything before it is a log line.
      const bannerAt = lines.findIndex((line) => line.startsWith('Development mode:')) - 1;
      expect(lines[bannerAt]).toBe('');
      const before = lines.slice(0, bannerAt);
      for (const line of before) expect(line).toMatch(DEV_LINE);
      expect(before.at(-1)).toMatch(
        /INFO {2}keyhook reference server listening on http:\/\/127\.0\.0\.1:\d+ {2}store: /,
      );
      // The banner ends with the portal link: tenant demo, every permission, an hour, once.
      await server.waitFor(new RegExp(`${PORTAL_LINK.source}\\n`, 'm'), 'the portal link');
      const banner = server.stdout.split('\n').slice(bannerAt);
      const linkAt = banner.findIndex((line) => PORTAL_LINK.test(line));
      expect(banner[linkAt - 1]).toBe(
        'Or in a browser: the customer portal (tenant "demo", every permission, valid 1 h; the link works once):',
      );
      expect(banner[linkAt + 1]).toBe('');
      expect(linkAt).toBeGreaterThan(banner.findIndex((line) => ADMIN_CURL.test(line)));

      expect(await server.stop()).toBe(0);
      expect(server.stderr).toBe('');
      // One line for every migration the file records (keyhook's and the data plane's), none other.
      const recorded = recordedMigrations(filename);
      const aboutMigrations = before.filter((line) => line.includes('migration'));
      expect(aboutMigrations).toHaveLength(1);
      expect(aboutMigrations[0]).toMatch(
        new RegExp(
          `INFO {2}applied ${recorded.length} migrations ${recorded[0]} … ${recorded.at(-1)} in \\d+ ms$`,
        ),
      );
    }));

  it('production: nothing but JSON lines on stdout (no token, no portal link), the migrations one line each at info', () =>
    firstStart(
      {
        NODE_ENV: 'production',
        KEYHOOK_ADMIN_JWT_SECRET: TEST_ADMIN_SECRET,
        KEYHOOK_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
      },
      async (server, filename) => {
        await server.listening();
        expect(await server.stop()).toBe(0);
        expect(server.stderr).toBe('');

        // No banner, so no token and no portal link.
        expect(server.stdout).not.toMatch(/KEYHOOK_ADMIN_TOKEN|#token=|kpl_/);
        const lines = server.stdout.trimEnd().split('\n');
        for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
        const entries: { level: number; msg: string; name?: string }[] = lines.map((line) =>
          JSON.parse(line),
        );
        const migrations = entries.filter((entry) => entry.msg.includes('migration'));
        expect(migrations.map((entry) => [entry.level, entry.name])).toEqual(
          recordedMigrations(filename).map((name) => [30, name]),
        );
        expect(entries.map((entry) => entry.msg)).toContainEqual(
          expect.stringMatching(
            /^keyhook reference server listening on http:\/\/127\.0\.0\.1:\d+ {2}store: /,
          ),
        );
        expect(entries.at(-1)?.msg).toBe('drained: exiting');
      },
    ));
});

describe('the development format', () => {
  /** 12:00:01 local time, whatever the machine's time zone. */
  const at = new Date(2026, 0, 2, 12, 0, 1).getTime();
  const line = (entry: object) =>
    renderLine(`${JSON.stringify({ time: at, pid: 7, hostname: 'h', ...entry })}\n`);

  it('is the time, the level and the message, then the fields the message does not state', () => {
    expect(
      line({
        level: 30,
        name: '0001_api_keys',
        durationMs: 3,
        msg: 'applied migration 0001_api_keys in 3 ms',
      }),
    ).toBe('12:00:01 INFO  applied migration 0001_api_keys in 3 ms');
    expect(line({ level: 40, webhookId: 'wh_1', reason: '410 Gone', msg: 'webhook endpoint disabled' })).toBe(
      '12:00:01 WARN  webhook endpoint disabled webhookId=wh_1 reason="410 Gone"',
    );
    // Only a whole word counts as stated: the 1 of 0001 is not version 1.
    expect(line({ level: 20, version: 1, msg: 'applying migration 0001_api_keys' })).toBe(
      '12:00:01 DEBUG applying migration 0001_api_keys version=1',
    );
    expect(line({ level: 30, reqId: 'req_1', res: { statusCode: 201 }, msg: 'request completed' })).toBe(
      '12:00:01 INFO  request completed reqId=req_1 res={"statusCode":201}',
    );
  });

  it('folds migrations applied one after another into one line, written when the next line comes', () => {
    const written: string[] = [];
    const stream = readableLines({ write: (text) => written.push(text) });
    const json = (entry: object) => `${JSON.stringify({ time: at, ...entry })}\n`;
    const applied = (name: string, ms: number) =>
      json({ level: 30, name, durationMs: ms, msg: `applied migration ${name} in ${ms} ms` });
    stream.write(applied('0001_api_keys', 3));
    stream.write(applied('0002_webhooks', 1));
    stream.write(applied('0003_deliveries', 2));
    expect(written).toEqual([]);
    stream.write(json({ level: 30, msg: 'listening' }));
    expect(written).toEqual([
      '12:00:01 INFO  applied 3 migrations 0001_api_keys … 0003_deliveries in 6 ms\n',
      '12:00:01 INFO  listening\n',
    ]);
    written.length = 0;
    stream.write(applied('0004_retention', 0));
    stream.write(json({ level: 50, msg: 'migration 0005_broken failed and was rolled back' }));
    expect(written).toEqual([
      '12:00:01 INFO  applied migration 0004_retention in 0 ms\n',
      '12:00:01 ERROR migration 0005_broken failed and was rolled back\n',
    ]);
  });

  it('keeps to one line, but for the stack of an error', () => {
    expect(line({ level: 30, msg: 'two\nlines' })).toBe('12:00:01 INFO  two\\nlines');
    const err = {
      type: 'Error',
      message: 'boom',
      stack: 'Error: boom\n    at one (a.js:1:1)\n    at two (b.js:2:2)',
    };
    expect(line({ level: 40, err, msg: 'retrying' })).toBe('12:00:01 WARN  retrying err="Error: boom"');
    expect(line({ level: 50, err, msg: 'request errored' }).split('\n')).toEqual([
      '12:00:01 ERROR request errored err="Error: boom"',
      '    at one (a.js:1:1)',
      '    at two (b.js:2:2)',
    ]);
    expect(renderLine('not json\n')).toBe('not json');
  });

  it('is redacted as rendered: a token that JSON escaping hid is caught once unescaped', () => {
    // In the JSON line the tab is `\t`, which the JSON line's own scrub does not read as a space.
    expect(line({ level: 30, msg: 'calling with Bearer\topaque-Zq81' })).toBe(
      `12:00:01 INFO  calling with Bearer\t${REDACTED}`,
    );
  });
});

describe('no credential in a development line', () => {
  it('the same redaction as the JSON lines, on every line the server writes', async () => {
    const temp = tempDir();
    const written: string[] = [];
    const server = await buildServer(loadConfig(sqliteEnv(temp.dir)), {
      logger: processLogger(false, { write: (text) => written.push(text) }),
      worker: false,
    });
    try {
      const baseUrl = await listen(server.app);
      const refusedJwt = await adminToken({ subject: 'sent-in-the-query' });
      const validJwt = await adminToken({ subject: 'sent-in-the-header' });
      const opaque = 'opaque-admin-secret-Zq81';
      const created = await requestJson('POST', `${baseUrl}/api/v1/admin/keys`, {
        token: validJwt,
        json: { name: 'k', scopes: ['sources:read'] },
      });
      expect(created.status).toBe(201);
      const apiKey: string = created.body.secret;
      const get = (url: string, headers: Record<string, string> = {}) =>
        requestJson('GET', `${baseUrl}${url}`, { headers });
      expect((await get(`/api/v1/admin/keys?access_token=${refusedJwt}`)).status).toBe(401);
      expect((await get('/api/v1/admin/keys', { authorization: `Bearer ${opaque}` })).status).toBe(401);
      expect(
        (await get(`/api/v1/sources?api_key=${apiKey}`, { authorization: `Bearer ${apiKey}` })).status,
      ).toBe(200);
      server.app.log.warn({ headers: { authorization: `Bearer ${opaque}` } }, 'headers');
      server.app.log.warn(`calling /x?access_token=${refusedJwt} with Bearer ${opaque}`);

      const text = written.join('');
      for (const entry of text.trimEnd().split('\n')) expect(entry).toMatch(DEV_LINE);
      expect(text).toContain(`/api/v1/admin/keys?access_token=${REDACTED}`);
      expect(text).toContain(`/api/v1/sources?api_key=${REDACTED}`);
      expect(text).toContain('admin session rejected');
      for (const secret of [refusedJwt, validJwt, opaque, apiKey, apiKey.slice(-48)]) {
        expect(text).not.toContain(secret);
      }
    } finally {
      await server.close();
      temp.remove();
    }
  });
});
