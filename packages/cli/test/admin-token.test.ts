import { decodeJwt, jwtVerify } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, run } from './support.js';

beforeAll(assertBuilt);

const SECRET = 'a-development-admin-secret-of-40-bytes!!';
const key = new TextEncoder().encode(SECRET);

describe('keyhook admin-token', () => {
  it('prints an HS256 token, signed with KEYHOOK_ADMIN_SECRET, for the tenant', async () => {
    const { code, stdout, stderr } = await run(['admin-token', '--tenant', 'acme'], {
      env: { KEYHOOK_ADMIN_SECRET: SECRET },
    });
    expect(code).toBe(0);
    expect(stderr).toBe('');
    const { payload, protectedHeader } = await jwtVerify(stdout.trim(), key, { algorithms: ['HS256'] });
    expect(protectedHeader.alg).toBe('HS256');
    expect(payload['tenant_id']).toBe('acme');
    expect(payload.sub).toBe('dev-admin');
    expect(payload.exp! - payload.iat!).toBe(3600);
  });

  it('sets issuer, audience, subject, tenant claim and lifetime from the flags', async () => {
    const { code, stdout } = await run(
      [
        'admin-token',
        '--tenant',
        'globex',
        '--issuer',
        'https://portal.example',
        '--audience',
        'keyhook-admin',
        '--subject',
        'alice',
        '--tenant-claim',
        'org',
        '--expires-in',
        '600',
      ],
      { env: { KEYHOOK_ADMIN_SECRET: SECRET } },
    );
    expect(code).toBe(0);
    const { payload } = await jwtVerify(stdout.trim(), key, {
      issuer: 'https://portal.example',
      audience: 'keyhook-admin',
    });
    expect(payload['org']).toBe('globex');
    expect(payload['tenant_id']).toBeUndefined();
    expect(payload.sub).toBe('alice');
    expect(payload.exp! - payload.iat!).toBe(600);
  });

  it('reads the secret from the variable --secret-env names', async () => {
    const { code, stdout } = await run(
      ['admin-token', '--tenant', 'acme', '--secret-env', 'MY_PORTAL_SECRET'],
      {
        env: { MY_PORTAL_SECRET: SECRET },
      },
    );
    expect(code).toBe(0);
    await expect(jwtVerify(stdout.trim(), key)).resolves.toBeDefined();
    expect(decodeJwt(stdout.trim())['tenant_id']).toBe('acme');
  });

  it('fails with exit 1, naming the variable, when the secret is unset or too short', async () => {
    const unset = await run(['admin-token', '--tenant', 'acme']);
    expect(unset.code).toBe(1);
    expect(unset.stdout).toBe('');
    expect(unset.stderr).toBe(
      'keyhook admin-token: set KEYHOOK_ADMIN_SECRET to your adminSession.secret (at least 32 bytes)\n',
    );
    const short = await run(['admin-token', '--tenant', 'acme', '--secret-env', 'SHORT'], {
      env: { SHORT: 'too-short' },
    });
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/SHORT holds fewer than 32 bytes/);
  });

  it('has no --secret flag, and says why without echoing the value', async () => {
    const { code, stderr } = await run(['admin-token', '--tenant', 'acme', `--secret=${SECRET}`]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/there is no --secret flag \(flags end up in shell history\)/);
    expect(stderr).not.toContain(SECRET);
  });

  it('exits 2 on bad usage: no tenant, a lifetime that is not a whole number or out of range', async () => {
    const env = { KEYHOOK_ADMIN_SECRET: SECRET };
    const noTenant = await run(['admin-token'], { env });
    expect(noTenant.code).toBe(2);
    expect(noTenant.stderr).toMatch(/--tenant <id> is required/);
    const notNumber = await run(['admin-token', '--tenant', 'acme', '--expires-in', '1h'], { env });
    expect(notNumber.code).toBe(2);
    expect(notNumber.stderr).toMatch(/--expires-in must be a whole number of seconds/);
    const tooLong = await run(['admin-token', '--tenant', 'acme', '--expires-in', '86401'], { env });
    expect(tooLong.code).toBe(2);
    expect(tooLong.stderr).toMatch(/from 1 to 86400/);
  });
});
