import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReferenceKeyhook } from '../src/catalog.js';
import type { StagingDb } from '../src/data-plane/db.js';
import { postgresStagingDb } from '../src/data-plane/postgres-db.js';
import { MAX_CONTENT_BYTES } from '../src/data-plane/schemas.js';
import { SourceStorage } from '../src/data-plane/sources.js';
import { sqliteStagingDb } from '../src/data-plane/sqlite-db.js';
import { type Backend, backends, type DataPlaneClient, startDataPlane } from './data-plane.js';

const MiB = 1024 * 1024;
const KiB300 = 300 * 1024;

/**
 * Items in key order with their content's size: 300 KiB ones three to a page of 1 MiB, 1 MiB
 * ones (the largest an item may be, data-plane.md §3.3) each larger than the budget as JSON.
 */
const ITEMS: [string, number][] = [
  ['a0', KiB300],
  ['a1', KiB300],
  ['a2', KiB300],
  ['a3', KiB300],
  ['b0', MAX_CONTENT_BYTES],
  ['b1', KiB300],
  ['b2', MAX_CONTENT_BYTES],
  ['b3', MAX_CONTENT_BYTES],
  ['c0', 10],
  ['c1', 10],
  ['c2', 10],
  ['c3', 10],
  ['c4', 10],
];

/** Every page of the source's items, as keys, following nextCursor to the end. */
async function pages(api: DataPlaneClient, sourceId: string, limit: number) {
  const keys: string[][] = [];
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams({ limit: String(limit), ...(cursor && { cursor }) });
    const reply = await api.call('GET', `/sources/${sourceId}/items?${query}`);
    expect(reply.status, JSON.stringify(reply.body).slice(0, 300)).toBe(200);
    const data = reply.body.data as { key: string; content: string }[];
    for (const item of data) expect(item.content).toHaveLength(ITEMS.find(([key]) => key === item.key)![1]);
    if (data.length > 1)
      expect(Buffer.byteLength(JSON.stringify(data))).toBeLessThanOrEqual(MiB + data.length + 1);
    keys.push(data.map((item) => item.key));
    cursor = reply.body.nextCursor;
  } while (cursor);
  return keys;
}

describe.each(backends)(
  'item pages within the byte budget on $name (data-plane.md §3.3)',
  (backend: Backend) => {
    let plane: Awaited<ReturnType<typeof startDataPlane>>;
    let sourceId: string;

    beforeAll(async () => {
      if (!backend.available) return;
      plane = await startDataPlane(backend, { worker: false });
      sourceId = await plane.api.createSource();
      for (const [key, size] of ITEMS) await plane.api.put(sourceId, key, 'x'.repeat(size));
    });
    afterAll(async () => {
      await plane?.close();
    });

    it.skipIf(!backend.available)(
      'a page of ?limit=100 stops at 1 MiB; a 1 MiB item comes alone; the cursor walk returns every item once, in order',
      async () => {
        expect(plane.running.server.keyhook.listByteBudget).toBe(MiB);
        expect(await pages(plane.api, sourceId, 100)).toEqual([
          ['a0', 'a1', 'a2'],
          ['a3'],
          ['b0'],
          ['b1'],
          ['b2'],
          ['b3'],
          ['c0', 'c1', 'c2', 'c3', 'c4'],
        ]);
        // The count keeps its meaning as a maximum.
        expect(await pages(plane.api, sourceId, 2)).toEqual([
          ['a0', 'a1'],
          ['a2', 'a3'],
          ['b0'],
          ['b1'],
          ['b2'],
          ['b3'],
          ['c0', 'c1'],
          ['c2', 'c3'],
          ['c4'],
        ]);
      },
    );

    it.skipIf(!backend.available)(
      'the store reads only the items the budget can reach, and the next one without its content, not limit + 1',
      async () => {
        const store = plane.running.server.config.store;
        const noEvents = {} as ReferenceKeyhook['events']; // reads publish nothing
        const db: StagingDb =
          store.kind === 'sqlite'
            ? sqliteStagingDb(new Database(store.filename), noEvents)
            : postgresStagingDb(
                { connectionString: store.connectionString, schema: store.schema, max: 1 },
                noEvents,
              );
        try {
          const storage = new SourceStorage(db);
          // Each item read, as its key and the length of the content read with it.
          const read = async (after?: string) =>
            (await storage.listItems('acme', sourceId, 101, MiB, after)).items.map(
              (item) => `${item.key} ${item.content.length}`,
            );
          // a0–a2 fit; a3 says a next page exists, its content unread (it cannot fit); b0 is not read.
          expect(await read()).toEqual([`a0 ${KiB300}`, `a1 ${KiB300}`, `a2 ${KiB300}`, 'a3 0']);
          expect((await storage.listItems('acme', sourceId, 101, MiB)).whole).toBe(3);
          // b0 alone is past the budget: it whole, and b1 only to say there is more.
          expect(await read('a3')).toEqual([`b0 ${MAX_CONTENT_BYTES}`, 'b1 0']);
          expect(await read('b2')).toEqual([`b3 ${MAX_CONTENT_BYTES}`, 'c0 0']);
          expect(await read('b3')).toEqual(['c0 10', 'c1 10', 'c2 10', 'c3 10', 'c4 10']);
          // A budget past them all reads up to the limit, whole.
          const all = await storage.listItems('acme', sourceId, 5, 100 * MiB);
          expect(all.whole).toBe(5);
          expect(all.items.map((item) => item.content.length)).toEqual([
            KiB300,
            KiB300,
            KiB300,
            KiB300,
            MAX_CONTENT_BYTES,
          ]);
        } finally {
          await db.close();
        }
      },
    );
  },
);
