import { adminToken, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { buildServer } from '../src/server.js';
import { Client, listen } from './client.js';
import { sqliteEnv, tempDir } from './instances.js';

const cwd = '/srv/app';
const operator = { KEYHOOK_ADMIN_JWT_SECRET: TEST_ADMIN_SECRET, KEYHOOK_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY };

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env, { cwd });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('NODE_ENV is read case-insensitively; an unknown value is refused', () => {
  it.each(['production', 'Production', 'PRODUCTION', ' production '])('%j is production', (value) => {
    expect(loadConfig({ ...operator, NODE_ENV: value }, { cwd }).production).toBe(true);
  });

  it('NODE_ENV=Production demands what production demands', () => {
    const problems = problemsOf({ NODE_ENV: 'Production' });
    expect(problems).toHaveLength(2);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/KEYHOOK_ENCRYPTION_KEY is required/),
        expect.stringMatching(/NODE_ENV=production needs KEYHOOK_ADMIN_JWT_SECRET/),
      ]),
    );
  });

  it.each(['development', 'Development', 'test', 'TEST', ''])('%j is not production', (value) => {
    expect(loadConfig({ NODE_ENV: value }, { cwd }).production).toBe(false);
  });

  it.each(['prod', 'staging', 'productoin', 'live'])('%j stops the start with a clear message', (value) => {
    expect(problemsOf({ ...operator, NODE_ENV: value })).toEqual([
      `NODE_ENV must be production, development or test (in any case), got "${value}"`,
    ]);
  });

  describe('over HTTP', () => {
    const cleanups: (() => Promise<void> | void)[] = [];
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    });

    it('a server started with NODE_ENV=Production runs in production: an http:// webhook is refused', async () => {
      const temp = tempDir();
      cleanups.push(temp.remove);
      const config = loadConfig({ ...sqliteEnv(temp.dir), ...operator, NODE_ENV: 'Production' });
      const server = await buildServer(config, { worker: false });
      cleanups.push(() => server.close());
      const client = new Client(await listen(server.app));
      const reply = await client.request('POST', '/api/v1/admin/webhooks', await adminToken(), {
        url: 'http://127.0.0.1:9/hook',
        events: ['run.completed'],
      });
      expect(reply.status).toBe(400);
      expect(JSON.stringify(reply.body)).toMatch(/https/i);
    });
  });
});
