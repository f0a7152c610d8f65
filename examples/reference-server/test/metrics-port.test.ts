import { createServer } from 'node:net';
import { adminToken } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { buildServer, type ReferenceServer } from '../src/server.js';
import { Client, listen } from './client.js';
import { sqliteEnv, tempDir } from './instances.js';

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** KEYHOOK_METRICS_PORT: keyhook's OpenTelemetry metrics as Prometheus text, on a port of their own. */
describe('the metrics port', () => {
  const temp = tempDir();
  let server: ReferenceServer;
  let client: Client;

  beforeAll(async () => {
    const port = await freePort();
    server = await buildServer(loadConfig({ ...sqliteEnv(temp.dir), KEYHOOK_METRICS_PORT: String(port) }));
    client = await Client.forServer(await listen(server.app));
  });

  afterAll(async () => {
    await server?.close();
    temp.remove();
  });

  it('serves /metrics with keyhook’s counts on its port, and the API port does not', async () => {
    const admin = await adminToken({ tenantId: 'acme' });
    const { secret } = await client.createKey(admin, { name: 'reader' });
    expect((await client.listSources(secret)).status).toBe(200);
    expect((await client.listSources(`${secret.slice(0, -4)}beef`)).status).toBe(401);

    expect(server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const scraped = await fetch(server.metricsUrl!);
    expect(scraped.status).toBe(200);
    const text = await scraped.text();
    expect(text).toMatch(/^keyhook_auth_outcomes_total\{keyhook_auth_outcome="ok"[^}]*\} 1$/m);
    expect(text).toMatch(/^keyhook_auth_outcomes_total\{keyhook_auth_outcome="invalid_api_key"[^}]*\} 1$/m);

    for (const path of ['/metrics', '/api/v1/metrics']) {
      const onApi = await fetch(`${client.baseUrl}${path}`);
      expect(onApi.status, path).toBe(404);
      expect(await onApi.text()).not.toContain('keyhook_auth_outcomes_total');
    }
  });

  it('refuses a port that is not one', () => {
    for (const bad of ['0', '70000', 'nine', '-1']) {
      expect(() => loadConfig({ KEYHOOK_METRICS_PORT: bad }), bad).toThrow(ConfigError);
    }
    expect(loadConfig({}).metricsPort).toBeNull();
  });
});
