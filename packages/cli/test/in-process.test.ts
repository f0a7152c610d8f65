import { describe, expect, it } from 'vitest';
import { redact } from '../src/errors.js';
import { run } from '../src/program.js';
import { captured } from './support.js';

describe('run(), with streams and environment passed in', () => {
  it('writes to the streams it is given and reads only the environment it is given', async () => {
    const io = captured({ KEYHOOK_ADMIN_SECRET: 'x'.repeat(32) });
    await expect(run(['admin-token', '--tenant', 'acme'], io)).resolves.toBe(0);
    expect(io.out.join('')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect(io.err).toEqual([]);

    const bare = captured();
    await expect(run(['admin-token', '--tenant', 'acme'], bare)).resolves.toBe(1);
    expect(bare.err.join('')).toMatch(/set KEYHOOK_ADMIN_SECRET/);
  });

  it('answers bad usage with 2 and a message on stderr', async () => {
    const io = captured();
    await expect(run(['migrate', '--dry-run'], io)).resolves.toBe(2);
    expect(io.out).toEqual([]);
    expect(io.err.join('')).toMatch(/^keyhook migrate: pass --database/);
  });
});

describe('redact()', () => {
  it("replaces any URL's password, and each secret it is given", () => {
    expect(redact('at postgres://app:hunter2@db:5432/x and mysql://r:p%40ss@h/y')).toBe(
      'at postgres://app:***@db:5432/x and mysql://r:***@h/y',
    );
    expect(redact('password=hunter2 failed', ['hunter2'])).toBe('password=*** failed');
    expect(redact('postgres://app@db/x has no password')).toBe('postgres://app@db/x has no password');
  });

  it('replaces the password of a user:password@ after scheme: without //, or with no scheme at all', () => {
    expect(redact('at postgres:/u:S3cretPw@127.0.0.1:1/db')).toBe('at postgres:/u:***@127.0.0.1:1/db');
    expect(redact('at postgresql:u:S3cretPw@h/db')).toBe('at postgresql:u:***@h/db');
    expect(redact('at postgres://:S3cretPw@h/db')).toBe('at postgres://:***@h/db');
    expect(redact('the SQLite database at ./u:S3cretPw@h.db')).toBe('the SQLite database at ./u:***@h.db');
    expect(redact('connect ECONNREFUSED 127.0.0.1:1')).toBe('connect ECONNREFUSED 127.0.0.1:1');
  });
});
