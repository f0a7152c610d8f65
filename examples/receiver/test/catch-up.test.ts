import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { keyhookFastify } from '@keyhook/adapter-fastify';
import { createKeyhook, type DeliveryWorker, type Keyhook, silentLogger } from '@keyhook/core';
import { createSqliteStore, type SqliteStore } from '@keyhook/store-sqlite';
import { adminToken, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, waitUntil } from '@keyhook/testing/support';
import type { WebhookEvent } from '@keyhook/webhook-verify';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catchUp } from '../src/catch-up.js';
import { createReceiver, REFERENCE_SERVER_HEADERS, SeenEventIds } from '../src/receiver.js';

/** The reference server's catalog, as its catalog.ts declares it: the run events, its header names. */
const REFERENCE_EVENTS = {
  'run.completed': { description: 'A run finished discovery successfully.' },
  'run.failed': { description: 'A run failed.' },
};

/**
 * The receiver against a server built as the reference server is (keyhook on a SQLite file, served
 * by Fastify, a delivery worker in the process), over real HTTP: it missed events while it was away, catches up with the feed at start, then takes live
 * deliveries, each event handled once whichever way it came.
 */
describe('examples/receiver catching up with the events feed (docs/http-api.md §4.8)', () => {
  let dir: string;
  let store: SqliteStore;
  let keyhook: Keyhook;
  let worker: DeliveryWorker;
  let app: ReturnType<typeof Fastify>;
  let apiUrl: string;
  let admin: string;

  const api = async (method: string, route: string, body?: unknown) => {
    const response = await fetch(`${apiUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // biome-ignore lint/suspicious/noExplicitAny: the test reads the answer field by field
    return { status: response.status, body: (await response.json()) as any };
  };

  const publish = async (runId: string, tenantId = 'acme') =>
    (await keyhook.events.publish({ tenantId, type: 'run.completed', data: { runId } })).event.id;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'keyhook-receiver-'));
    store = createSqliteStore({ filename: path.join(dir, 'keyhook.db') });
    keyhook = createKeyhook({
      store,
      adminSession: { secret: TEST_ADMIN_SECRET },
      encryptionKey: TEST_ENCRYPTION_KEY,
      mode: 'development', // http://127.0.0.1 endpoints
      scopes: ['runs:read'],
      eventCatalog: REFERENCE_EVENTS,
      delivery: { headers: REFERENCE_SERVER_HEADERS },
      logger: silentLogger,
    });
    worker = keyhook.createWorker();
    worker.start();
    app = Fastify();
    await app.register(keyhookFastify, { keyhook });
    await app.listen({ port: 0, host: '127.0.0.1' });
    apiUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;
    admin = await adminToken({ tenantId: 'acme' });
  });

  afterAll(async () => {
    await app?.close();
    await keyhook?.close();
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes what it missed from the feed, page by page, then live deliveries; each event once', async () => {
    const key = await api('POST', '/admin/keys', { name: 'receiver feed', scopes: ['events:read'] });
    expect(key.status).toBe(201);
    // Five events while the receiver had no endpoint; it took the first one before it went away.
    const missed: string[] = [];
    for (let i = 1; i <= 5; i++) missed.push(await publish(`run_${i}`));
    await publish('run_other', 'globex');

    const created = await api('POST', '/admin/webhooks', {
      url: 'http://127.0.0.1:9/',
      events: ['run.completed'],
    });
    expect(created.status).toBe(201);
    const seen = new SeenEventIds();
    const handled: WebhookEvent[] = [];
    const handle = (event: WebhookEvent) => {
      handled.push(event);
    };
    const receiver = createReceiver({ secret: created.body.secret, seen, handle });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
      expect((await api('PATCH', `/admin/webhooks/${created.body.webhook.id}`, { url })).status).toBe(200);

      // At start: the feed after the last id it took, two at a time, until hasMore is false.
      const first = await catchUp({
        apiUrl,
        apiKey: key.body.secret,
        after: missed[0],
        seen,
        handle,
        limit: 2,
      });
      expect(first).toEqual({ after: missed[4], handled: 4, restarted: false });
      expect(handled.map((event) => event.id)).toEqual(missed.slice(1));
      expect(handled[0]).toEqual({
        id: missed[1],
        type: 'run.completed',
        createdAt: expect.any(String),
        data: { runId: 'run_2' },
      });

      // Then live: a new event arrives signed, is verified and handled.
      const live = await publish('run_6');
      await waitUntil(() => handled.some((event) => event.id === live));

      // The next catch-up finds it in the feed, already taken: dropped by its id.
      const again = await catchUp({ apiUrl, apiKey: key.body.secret, after: first.after, seen, handle });
      expect(again).toEqual({ after: live, handled: 0, restarted: false });
      expect(handled.map((event) => event.id)).toEqual([...missed.slice(1), live]);
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  it('a key without events:read is refused, and the catch-up says so', async () => {
    const key = await api('POST', '/admin/keys', { name: 'no feed', scopes: ['runs:read'] });
    const seen = new SeenEventIds();
    await expect(catchUp({ apiUrl, apiKey: key.body.secret, seen, handle: () => {} })).rejects.toThrow(
      /GET \/events answered 403: .*insufficient_scope/,
    );
  });
});
