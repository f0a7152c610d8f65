import { adminToken } from '@keyhook/testing/support';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Running, sqliteEnv, start, tempDir } from './instances.js';

const temp = tempDir();
let running: Running;

beforeAll(async () => {
  running = await start(sqliteEnv(temp.dir));
});

afterAll(async () => {
  await running.server.close();
  temp.remove();
});

// The one real-time expiry test: everything else about expiry runs on a fake clock in core.
it('docs/http-api.md §3: a key works until expiresAt and answers 401 key_expired after it (real clock, ~1.5 s)', async () => {
  const admin = await adminToken({ tenantId: 'acme' });
  const expiresAt = new Date(Date.now() + 1500);
  const { secret } = await running.client.createKey(admin, { expiresAt: expiresAt.toISOString() });

  const before = await running.client.listSources(secret);
  expect(before.status).toBe(200);
  const whoami = await running.client.request('GET', '/api/v1/whoami', secret);
  expect(whoami.body.key.expiresAt).toBe(expiresAt.toISOString());

  // Real time: the server, built from its environment, takes no clock; 20 ms past expiresAt.
  await new Promise((resolve) => setTimeout(resolve, expiresAt.getTime() - Date.now() + 20));
  const after = await running.client.listSources(secret);
  expect(after.status).toBe(401);
  expect(after.body.error.code).toBe('key_expired');
});
