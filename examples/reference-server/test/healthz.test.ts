import { postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { dropSchema, postgresEnv, type Running, sqliteEnv, start, tempDir } from './instances.js';

const withPostgres = await postgresAvailable();

describe('GET /healthz when the store is gone (data-plane.md §7.2)', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const expectDown = async (running: Running) => {
    expect((await running.client.request('GET', '/healthz')).status).toBe(200);
    await running.server.store.close();
    const reply = await running.client.request('GET', '/healthz');
    expect(reply).toMatchObject({ status: 503, body: { error: { code: 'unavailable' } } });
    expect(reply.headers.get('retry-after')).toBe('1');
    // The server itself stays up and keeps answering.
    expect((await running.client.request('GET', '/healthz')).status).toBe(503);
  };

  it('SQLite: 200, then 503 { status: unavailable } once the store is closed', async () => {
    const temp = tempDir();
    cleanups.push(temp.remove);
    const running = await start(sqliteEnv(temp.dir));
    cleanups.push(() => running.server.close());
    await expectDown(running);
  });

  it.skipIf(!withPostgres)('Postgres: 200, then 503 once the pool is closed', async () => {
    const schema = uniqueSchemaName('ref_health');
    cleanups.push(() => dropSchema(schema));
    const running = await start(postgresEnv(schema));
    cleanups.push(() => running.server.close());
    await expectDown(running);
  });

  it('with the store gone, the guarded route answers 503 unavailable, not 500', async () => {
    const temp = tempDir();
    cleanups.push(temp.remove);
    const running = await start(sqliteEnv(temp.dir));
    cleanups.push(() => running.server.close());
    await running.server.store.close();
    const reply = await running.client.listSources(`sk_live_${'a'.repeat(16)}_${'b'.repeat(48)}`);
    expect(reply.status).toBe(503);
    expect(reply.body.error.code).toBe('unavailable');
  });
});
