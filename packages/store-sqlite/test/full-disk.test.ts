import path from 'node:path';
import { isKeyhookError } from '@keyhook/core';
import { T0, webhookRecord } from '@keyhook/store-conformance';
import { fillingPublisher, mountSmallDisk } from '@keyhook/testing/support';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createSqliteStore } from '../src/index.js';

/**
 * The store on a real filesystem that fills up (a 4 MiB tmpfs): SQLite answers SQLITE_FULL, the
 * group commit refuses every publish of a group that did not commit, and the same store writes
 * again once space is freed (docs/decisions.md §20.3).
 */
const disk = mountSmallDisk('sqlite-full', { sizeMiB: 4 });
/** Publishes per turn of the event loop: each turn's are one group commit. */
const GROUP = 16;
/** A payload of a few KiB, so the space left is taken in a few dozen groups. */
const PAD_BYTES = 3000;

describe.skipIf(disk === null)('a full disk under the SQLite store', () => {
  const filename = path.join(disk?.dataDir ?? '', 'keyhook.db');
  const store = disk ? createSqliteStore({ filename }) : undefined;
  const webhook = webhookRecord({ events: ['run.completed'] });
  const { accepted, refused, causes, publishGroup } = fillingPublisher(
    { publishEvent: (event, deliveryId) => store!.publishEvent(event, deliveryId) },
    webhook.tenantId,
    { group: GROUP, padBytes: PAD_BYTES, createdAt: T0 },
  );

  afterAll(async () => {
    await store?.close();
    disk?.remove();
  });

  /** What a second connection reads from the file: events, deliveries, and whether it is sound. */
  const onFile = () => {
    const db = new Database(filename, { readonly: true });
    try {
      return {
        events: db.prepare('SELECT id FROM keyhook_events ORDER BY id').pluck().all() as string[],
        deliveries: db.prepare('SELECT event_id FROM keyhook_deliveries ORDER BY event_id').pluck().all(),
        inFlight: db
          .prepare("SELECT count(*) FROM keyhook_deliveries WHERE status = 'in_flight'")
          .pluck()
          .get(),
        integrity: db.pragma('integrity_check', { simple: true }),
        foreignKeys: db.pragma('foreign_key_check'),
      };
    } finally {
      db.close();
    }
  };

  it('publishes are refused with unavailable (SQLITE_FULL) once the disk is full, each group whole', async () => {
    await store!.insertWebhook(webhook);
    disk!.fill(200 * 1024);
    // Until three groups in a row are refused whole: the disk is full, not short for one commit.
    let wholeRefusals = 0;
    for (let round = 0; round < 500 && wholeRefusals < 3; round++) {
      wholeRefusals = (await publishGroup()) === GROUP ? wholeRefusals + 1 : 0;
    }
    expect(wholeRefusals).toBe(3);
    expect(accepted.length).toBeGreaterThan(0);
    expect(
      [...causes].every((code) => code.startsWith('SQLITE_FULL') || code.startsWith('SQLITE_IOERR')),
    ).toBe(true);
    // A publish that was refused left nothing: no event, no delivery. One that was accepted is whole.
    const file = onFile();
    expect(file.events).toEqual([...accepted].sort());
    expect(file.deliveries).toEqual([...accepted].sort());
    expect(file.integrity).toBe('ok');
  });

  /** Every delivery leased, by event id: each accepted publish must be leased exactly once. */
  const leased: string[] = [];
  let leases = 0;
  /** One lease of up to 100 deliveries, far enough ahead that every delivery is due. */
  const lease = async () => {
    const batch = await store!.leaseDeliveries({
      now: new Date(Date.now() + 60_000),
      limit: 100,
      leaseMs: 600_000,
      leaseId: `lease-${++leases}`,
    });
    leased.push(...batch.map((d) => d.delivery.eventId));
    return batch.length;
  };

  it('while full, reads answer; a lease either fits in what is left and is on file, or is refused with unavailable and left nothing', async () => {
    const page = await store!.listDeliveries(webhook.tenantId, webhook.id, { limit: 5 });
    expect(page).toHaveLength(5);
    expect(await store!.getWebhook(webhook.tenantId, webhook.id)).toEqual(
      expect.objectContaining({ id: webhook.id }),
    );
    // A lease writes a few pages, which may fit in the write-ahead log the refused groups' bigger
    // commits grew, or may not: each outcome is checked against the file.
    const outcome = await lease().then(
      (count) => ({ count, error: null }),
      (error: unknown) => ({ count: 0, error }),
    );
    const inFlight = onFile().inFlight;
    if (outcome.error === null) {
      expect(outcome.count).toBeGreaterThan(0);
      expect(inFlight).toBe(outcome.count);
    } else {
      expect(isKeyhookError(outcome.error) && outcome.error.code, String(outcome.error)).toBe('unavailable');
      expect(inFlight).toBe(0);
    }
  });

  it('once space is freed the same store writes again, and leases each accepted delivery once', async () => {
    disk!.unfill();
    const before = accepted.length;
    expect(await publishGroup()).toBe(0);
    expect(accepted.length).toBe(before + GROUP);
    while ((await lease()) > 0) {
      // until a lease finds nothing due
    }
    expect([...leased].sort()).toEqual([...accepted].sort());
    const file = onFile();
    expect(file.events).toEqual([...accepted].sort());
    expect(refused.filter((id) => file.events.includes(id))).toEqual([]);
    expect(file.integrity).toBe('ok');
    expect(file.foreignKeys).toEqual([]);
  });
});
