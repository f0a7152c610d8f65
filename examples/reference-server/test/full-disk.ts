import { randomBytes } from 'node:crypto';
import { isKeyhookError } from '@keyhook/core';
import { requestJson, type SmallDisk, TestReceiver, waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reply } from './client.js';
import { type DataPlaneClient, startDataPlane } from './data-plane.js';
import { allDeliveries, countBy, receivedCounts, repeated, TENANT } from './delivery-load.js';
import { runCompletedData } from './event-data.js';

/** The database of one full-disk suite, on a small disk the suite fills and frees. */
export interface FullDiskDatabase {
  disk: SmallDisk;
  /** The server's environment for this database. */
  env: Record<string, string>;
  /** The ids in the events table, read over a connection of the test's own. */
  eventIds(): Promise<string[]>;
  /** Fails unless the database is sound (SQLite's integrity_check, Postgres's amcheck). */
  checkSound(): Promise<void>;
  tearDown(): Promise<void>;
}

/** Publishes per round, sent at once. */
const GROUP = 8;
/** Text that does not compress (Postgres would make a repeated character a few bytes). */
const noise = (bytes: number) => randomBytes(bytes / 2).toString('hex');

/**
 * One server on a small disk, a receiver counting deliveries by event id; the disk is filled until
 * writes are refused, then freed (docs/decisions.md §20.3). Each case needs the one before it.
 */
export function fullDiskSuite(name: string, open: () => Promise<FullDiskDatabase | null>): void {
  let database: FullDiskDatabase | null = null;
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  let api: DataPlaneClient;
  let receiver: TestReceiver;
  let webhookId: string;
  let sourceId: string;
  const accepted: string[] = [];
  const refused: string[] = [];
  let next = 0;

  beforeAll(async () => {
    database = await open();
    if (database === null) return;
    receiver = await TestReceiver.start();
    plane = await startDataPlane(
      { name, available: true, setUp: async () => ({ env: database!.env, tearDown: async () => {} }) },
      {},
    );
    api = plane.api;
    const reply = await plane.running.client.request('POST', '/api/v1/admin/webhooks', plane.admin, {
      url: receiver.url('/hook'),
      events: ['run.completed'],
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    webhookId = reply.body.webhook.id;
    sourceId = await api.createSource('full disk');
  });

  afterAll(async () => {
    try {
      await plane?.close();
      await receiver?.close();
    } finally {
      // The mount and the tablespace go even when the server did not close.
      await database?.tearDown();
    }
  });

  /** One round: GROUP publishes through the host's keyhook and one item of 64 KiB over HTTP. */
  const round = async () => {
    const ids = Array.from({ length: GROUP }, () => `evt_full_${String(next++).padStart(5, '0')}`);
    const [item, ...outcomes] = await Promise.all([
      api.call('PUT', `/sources/${sourceId}/items/item-${next}`, { content: noise(64 * 1024) }),
      ...ids.map((id) =>
        plane.running.server.keyhook.events
          .publish({
            tenantId: TENANT,
            type: 'run.completed',
            id,
            data: runCompletedData({ pad: noise(2048) }),
          })
          .then(
            () => true,
            (error: unknown) => {
              // A refusal is `unavailable` (503 with Retry-After to a caller over HTTP), never a bug.
              expect(isKeyhookError(error) && error.code, String(error)).toBe('unavailable');
              return false;
            },
          ),
      ),
    ]);
    for (const [index, id] of ids.entries()) (outcomes[index] ? accepted : refused).push(id);
    expectCreatedOrUnavailable(item!);
    return { item: item!, refusedPublishes: outcomes.filter((ok) => !ok).length };
  };

  const skip = () => database === null;

  describe(`a full disk under the reference server on ${name}`, () => {
    it('writes get 503 unavailable in the envelope once the disk is full; reads still answer', async (context) => {
      if (skip()) return context.skip();
      database!.disk.fill(512 * 1024);
      // Until three rounds in a row are refused whole: the disk is full, not short for one write.
      let wholeRefusals = 0;
      for (let n = 0; n < 300 && wholeRefusals < 3; n++) {
        const { item, refusedPublishes } = await round();
        wholeRefusals = item.status === 503 && refusedPublishes === GROUP ? wholeRefusals + 1 : 0;
      }
      expect(wholeRefusals).toBe(3);
      expect(accepted.length).toBeGreaterThan(0);
      // A small write may still fit in what the refused bigger ones left; a few more take it.
      let keyReply: Reply | undefined;
      for (let n = 0; n < 200 && keyReply?.status !== 503; n++) {
        keyReply = await plane.running.client.request('POST', '/api/v1/admin/keys', plane.admin, {
          name: `key ${n} ${noise(160)}`,
          scopes: ['sources:read'],
        });
        expectCreatedOrUnavailable(keyReply);
      }
      expect(keyReply!.status).toBe(503);

      const reads = [
        await plane.running.client.request('GET', '/api/v1/admin/keys', plane.admin),
        await plane.running.client.request(
          'GET',
          `/api/v1/admin/webhooks/${webhookId}/deliveries`,
          plane.admin,
        ),
        await api.call('GET', '/sources'),
        await api.call('GET', `/sources/${sourceId}/items?limit=5`),
        await requestJson('GET', `${plane.running.client.baseUrl}/healthz`),
      ];
      expect(reads.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200]);
    });

    it('once space is freed, writes succeed again without a restart', async (context) => {
      if (skip()) return context.skip();
      database!.disk.unfill();
      const before = accepted.length;
      const { item, refusedPublishes } = await round();
      expect(item.status, JSON.stringify(item.body)).toBe(201);
      expect(refusedPublishes).toBe(0);
      expect(accepted.length).toBe(before + GROUP);
      const key = await plane.running.client.request('POST', '/api/v1/admin/keys', plane.admin, {
        name: 'after',
        scopes: ['sources:read'],
      });
      expect(key.status, JSON.stringify(key.body)).toBe(201);
    });

    it('every accepted publish is delivered exactly once, no refused one exists, and the database is sound', async (context) => {
      if (skip()) return context.skip();
      await waitUntil(
        () => accepted.every((id) => receivedCounts(receiver, '/hook').has(id)),
        30_000,
        () => `${receivedCounts(receiver, '/hook').size}/${accepted.length} accepted events arrived`,
      );
      // Every delivery final in the store: the worker has nothing left to send.
      let deliveries = await allDeliveries(plane.running.server.store, webhookId);
      await waitUntil(
        async () => {
          deliveries = await allDeliveries(plane.running.server.store, webhookId);
          return deliveries.every((d) => d.status === 'succeeded');
        },
        30_000,
        () => `deliveries not all succeeded: ${JSON.stringify(countBy(deliveries, (d) => d.status))}`,
      );
      expect(deliveries.map((d) => d.eventId).sort()).toEqual([...accepted].sort());
      const counts = receivedCounts(receiver, '/hook');
      expect(repeated(counts)).toEqual([]);
      expect([...counts.keys()].sort()).toEqual([...accepted].sort());
      expect(refused.length).toBeGreaterThan(0);
      expect(await database!.eventIds()).toEqual([...accepted].sort());
      await database!.checkSound();
      console.log(
        `[full disk, ${name}] ${accepted.length} publishes accepted and delivered once each, ` +
          `${refused.length} refused with unavailable; ${receiver.to('/hook').length} requests at the receiver`,
      );
    });
  });
}

/** A write while the disk fills: done, or refused in the envelope as `unavailable`, never a 500. */
function expectCreatedOrUnavailable(reply: Reply): void {
  if (reply.status === 201) return;
  expect(reply.status, JSON.stringify(reply.body)).toBe(503);
  expect(reply.body.error.code).toBe('unavailable');
  expect(typeof reply.body.error.message).toBe('string');
  expect(reply.headers.get('retry-after')).toBe('1');
}
