import { TEST_ADMIN_SECRET } from '@keyhook/testing/support';
import { SignJWT } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_ADMIN_MAX_TOKEN_LIFETIME_SECONDS, loadConfig } from '../src/config.js';
import { devTokenBanner, mintDevAdminToken } from '../src/dev-token.js';
import { buildServer } from '../src/server.js';
import { Client, listen } from './client.js';
import { sqliteEnv, tempDir } from './instances.js';

const HOUR = 60 * 60;
const YEAR = 365 * 24 * HOUR;
const now = () => Math.floor(Date.now() / 1000);

/** A real HS256 admin JWT with exactly these time claims. */
function token(times: { iat?: number; exp: number }): Promise<string> {
  const claims: Record<string, unknown> = { tenant_id: 'tenant_a', sub: 'admin_1', exp: times.exp };
  if (times.iat !== undefined) claims['iat'] = times.iat;
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .sign(new TextEncoder().encode(TEST_ADMIN_SECRET));
}

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env, { cwd: '/srv/app' });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('KEYHOOK_ADMIN_JWT_MAX_LIFETIME', () => {
  it('defaults to 24 h and reads a duration of whole seconds', () => {
    expect(DEFAULT_ADMIN_MAX_TOKEN_LIFETIME_SECONDS).toBe(24 * HOUR);
    expect(loadConfig({}).adminMaxTokenLifetimeSeconds).toBe(24 * HOUR);
    expect(loadConfig({ KEYHOOK_ADMIN_JWT_MAX_LIFETIME: '15m' }).adminMaxTokenLifetimeSeconds).toBe(900);
    expect(loadConfig({ KEYHOOK_ADMIN_JWT_MAX_LIFETIME: '7d' }).adminMaxTokenLifetimeSeconds).toBe(
      7 * 24 * HOUR,
    );
  });

  it.each(['0s', '500ms', '1500ms', 'forever', '-1h', '1.5h'])('refuses %j', (value) => {
    expect(problemsOf({ KEYHOOK_ADMIN_JWT_MAX_LIFETIME: value })).toEqual([
      expect.stringContaining('KEYHOOK_ADMIN_JWT_MAX_LIFETIME must be a whole number of seconds'),
    ]);
  });

  describe('over HTTP', () => {
    const cleanups: (() => Promise<void> | void)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    const start = async (extra: Record<string, string> = {}) => {
      const temp = tempDir();
      cleanups.push(temp.remove);
      const server = await buildServer(loadConfig({ ...sqliteEnv(temp.dir), ...extra }), { worker: false });
      cleanups.push(() => server.close());
      const client = new Client(await listen(server.app));
      return (jwt: string) => client.request('GET', '/api/v1/admin/keys', jwt);
    };

    it('by default, a token living 100 years, 24 h + 1 s, or without iat is refused with 401 invalid_admin_session', async () => {
      const list = await start();
      expect((await list(await token({ iat: now(), exp: now() + HOUR }))).status).toBe(200);
      expect((await list(await token({ iat: now(), exp: now() + 24 * HOUR }))).status).toBe(200);
      for (const jwt of [
        await token({ iat: now(), exp: now() + 100 * YEAR }),
        await token({ iat: now(), exp: now() + 24 * HOUR + 1 }),
        await token({ exp: now() + HOUR }),
        await token({ iat: now() + 100 * YEAR, exp: now() + 100 * YEAR + HOUR }),
      ]) {
        const reply = await list(jwt);
        expect(reply.status).toBe(401);
        expect(reply.body.error.code).toBe('invalid_admin_session');
      }
    });

    it('KEYHOOK_ADMIN_JWT_MAX_LIFETIME=2d admits a 25 h token; 1h refuses a 2 h one', async () => {
      const long = await start({ KEYHOOK_ADMIN_JWT_MAX_LIFETIME: '2d' });
      expect((await long(await token({ iat: now(), exp: now() + 25 * HOUR }))).status).toBe(200);
      expect((await long(await token({ iat: now(), exp: now() + 100 * YEAR }))).status).toBe(401);
      const short = await start({ KEYHOOK_ADMIN_JWT_MAX_LIFETIME: '1h' });
      expect((await short(await token({ iat: now(), exp: now() + HOUR }))).status).toBe(200);
      expect((await short(await token({ iat: now(), exp: now() + 2 * HOUR }))).status).toBe(401);
    });
  });

  it('the development token can be minted within a shorter maximum, and the banner says so', async () => {
    const jwt = await mintDevAdminToken({ secret: TEST_ADMIN_SECRET, expiresInSeconds: 1800 });
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());
    expect(claims.exp - claims.iat).toBe(1800);
    expect(devTokenBanner(jwt, 'http://127.0.0.1:3000', 1800)).toContain('valid 30 min');
    expect(devTokenBanner(jwt, 'http://127.0.0.1:3000')).toContain('valid 12 h');
  });
});
