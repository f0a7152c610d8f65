import { waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNKED_SNAPSHOT_MIN } from '../src/data-plane/sources.js';
import { type Backend, backends, type startDataPlane, startDataPlaneWithSql } from './data-plane.js';

/**
 * Large snapshots and applies are written in chunks, each a short transaction, and made visible
 * with one final one (data-plane.md §5). These tests show what that must
 * keep: every item lands; a failure half-way (a real constraint violation, from a trigger this
 * test installs in the server's own database) leaves the previous state whole and visible, and
 * nothing of the unfinished write behind; a request on the same source during a chunked
 * snapshot sees the set before it or after it, never part of it. Timing is the benchmark's
 * (benchmarks/snapshot-stall.mjs), not a test's.
 */
describe.each(backends)('chunked snapshots and applies on $name', (backend: Backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  /** Runs SQL in the server's database, on a connection of the test's own. */
  let sql: (text: string) => Promise<Record<string, unknown>[]>;
  let cleanUp: () => Promise<void>;

  beforeAll(async () => {
    if (!backend.available) return;
    ({ plane, sql, close: cleanUp } = await startDataPlaneWithSql(backend));
  });
  afterAll(async () => {
    await cleanUp?.();
  });

  const item = (n: number, version = 1) => ({
    key: `doc-${String(n).padStart(5, '0')}`,
    title: `Page ${n}`,
    content: `Version ${version} of page ${n}. Some words to cut into a passage.`,
  });
  const items = (count: number, version = 1) => Array.from({ length: count }, (_, n) => item(n, version));

  /** Makes inserts of `key` into `table` fail with a constraint error, until `allow` is called. */
  async function failInsertsOf(table: string, key: string) {
    const name = `fail_${table}`;
    if (backend.name === 'SQLite') {
      await sql(
        `CREATE TRIGGER ${name} BEFORE INSERT ON ${table} WHEN NEW.key = '${key}' BEGIN SELECT RAISE(ABORT, 'injected constraint failure'); END`,
      );
      return { allow: () => sql(`DROP TRIGGER ${name}`) };
    }
    await sql(
      `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         IF NEW.key = '${key}' THEN RAISE EXCEPTION 'injected constraint failure'; END IF; RETURN NEW; END $$`,
    );
    await sql(`CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
    return {
      allow: async () => {
        await sql(`DROP TRIGGER ${name} ON ${table}`);
        await sql(`DROP FUNCTION ${name}()`);
      },
    };
  }

  const count = async (text: string) => Number((((await sql(text)) as { n: number }[])[0] ?? { n: 0 }).n);

  it.skipIf(!backend.available)(
    'a snapshot larger than one chunk lands whole, and re-snapshots diff as such',
    async () => {
      const { api } = plane;
      const size = CHUNKED_SNAPSHOT_MIN * 3 + 7;
      const source = await api.createSource('whole');
      const staged = await api.call('PUT', `/sources/${source}/items`, { items: items(size) });
      expect(staged.status, JSON.stringify(staged.body)).toBe(200);
      expect(staged.body).toMatchObject({ created: size, updated: 0, unchanged: 0, removed: 0 });
      expect(staged.body.source.stagedRevision).toBe(1);
      const first = await api.runAndApply(source);
      expect(first).toMatchObject({ status: 'applied', generation: 1, counts: { added: size } });
      const active = await api.call('GET', `/sources/${source}/generations/active`);
      expect(active.body.generation).toMatchObject({ itemCount: size, passageCount: size });

      // Keep the first two thirds (the first 100 changed), drop the rest, add 50.
      const kept = (size * 2) / 3;
      const next = [
        ...items(100, 2),
        ...items(Math.floor(kept)).slice(100),
        ...Array.from({ length: 50 }, (_, n) => item(size + n)),
      ];
      const restaged = await api.call('PUT', `/sources/${source}/items`, { items: next });
      expect(restaged.body).toMatchObject({
        created: 50,
        updated: 100,
        unchanged: Math.floor(kept) - 100,
        removed: size - Math.floor(kept),
      });
      const reading = await api.call('GET', `/sources/${source}/items?limit=1`);
      expect(reading.body.data[0].content).toBe(item(0, 2).content);
      const second = await api.runAndApply(source);
      expect(second).toMatchObject({
        status: 'applied',
        generation: 2,
        counts: {
          added: 50,
          updated: 100,
          removed: size - Math.floor(kept),
          unchanged: Math.floor(kept) - 100,
        },
      });
      // Nothing of the replaced sets is left behind: one row per visible item.
      expect(await count(`SELECT count(*) AS n FROM staging_items WHERE source_id LIKE '${source}%'`)).toBe(
        next.length,
      );
    },
  );

  it.skipIf(!backend.available)(
    'a snapshot that fails in its last chunk leaves the previous staged set whole, and the source writable',
    async () => {
      const { api } = plane;
      const size = CHUNKED_SNAPSHOT_MIN * 2 + 10;
      const source = await api.createSource('fails');
      expect((await api.call('PUT', `/sources/${source}/items`, { items: items(size) })).status).toBe(200);
      expect(await api.runAndApply(source)).toMatchObject({ status: 'applied', generation: 1 });

      const failing = await failInsertsOf('staging_items', item(size - 5).key);
      const refused = await api.call('PUT', `/sources/${source}/items`, { items: items(size, 2) });
      expect(refused.status).toBeGreaterThanOrEqual(500);
      await failing.allow();

      // The first set, whole: the same revision, the old content, and a run finds nothing to do.
      const read = await api.call('GET', `/sources/${source}`);
      expect(read.body.source.stagedRevision).toBe(1);
      expect((await api.call('GET', `/sources/${source}/items?limit=1`)).body.data[0].content).toBe(
        item(0).content,
      );
      const run = await api.startRun(source);
      expect(await api.settled(source, run.id)).toMatchObject({ status: 'completed', noop: true });
      // The unfinished set's rows are gone, and the claim with them: the same snapshot goes through now.
      expect(await count(`SELECT count(*) AS n FROM staging_items WHERE source_id LIKE '${source}%'`)).toBe(
        size,
      );
      const again = await api.call('PUT', `/sources/${source}/items`, { items: items(size, 2) });
      expect(again.body).toMatchObject({ updated: size, created: 0, removed: 0 });
      expect(again.body.source.stagedRevision).toBe(2);
    },
  );

  it.skipIf(!backend.available)(
    'an apply that fails in its last chunk leaves the active generation as it was, and no row of the unfinished one',
    async () => {
      const { api } = plane;
      const size = CHUNKED_SNAPSHOT_MIN * 2 + 10;
      const source = await api.createSource('apply fails');
      await api.call('PUT', `/sources/${source}/items`, { items: items(size) });
      expect(await api.runAndApply(source)).toMatchObject({ status: 'applied', generation: 1 });
      await api.call('PUT', `/sources/${source}/items`, { items: items(size, 2) });

      const failing = await failInsertsOf('staging_passages', item(size - 5).key);
      const run = await api.startRun(source);
      await api.settled(source, run.id);
      expect((await api.apply(source, run.id)).status).toBe(202);
      const failed = await api.settled(source, run.id);
      expect(failed.status).toBe('apply_failed');
      expect(String(failed.reason)).toContain('injected constraint failure');
      await failing.allow();
      expect(await api.activeGeneration(source)).toBe(1);
      const generations = await api.call('GET', `/sources/${source}/generations`);
      expect(generations.body.data.map((g: { number: number }) => g.number)).toEqual([1]);
      for (const table of ['staging_generation_items', 'staging_passages']) {
        expect(
          await count(`SELECT count(*) AS n FROM ${table} WHERE source_id = '${source}' AND generation = 2`),
        ).toBe(0);
      }

      const retry = await api.runAndApply(source);
      expect(retry).toMatchObject({ status: 'applied', generation: 2, counts: { updated: size } });
      const active = await api.call('GET', `/sources/${source}/generations/active`);
      expect(active.body.generation, JSON.stringify(active.body)).toMatchObject({
        number: 2,
        itemCount: size,
        passageCount: size,
      });
    },
  );

  it.skipIf(!backend.available)(
    'during a chunked snapshot, runs on the source pin the set before it or after it, and an item write waits for it',
    async () => {
      const { api } = plane;
      const size = CHUNKED_SNAPSHOT_MIN * 8;
      const source = await api.createSource('busy');
      for (const n of [1, 2, 3]) await api.put(source, `old-${n}`, `Old ${n}.`);

      let done = false;
      const snapshot = api.call('PUT', `/sources/${source}/items`, { items: items(size) }).finally(() => {
        done = true;
      });
      const runs: { id: string; sentDuring: boolean }[] = [];
      let extra: Promise<unknown> | undefined;
      // Runs back to back, each sent once the last was answered, until the snapshot answers.
      while (!done) {
        const sentDuring = !done;
        runs.push({ ...(await api.startRun(source)), sentDuring });
        extra ??= api.put(source, 'extra', 'Written during the snapshot.');
      }
      const staged = await snapshot;
      expect(staged.status, JSON.stringify(staged.body)).toBe(200);
      expect(staged.body.created).toBe(size);
      expect(runs.some((run) => run.sentDuring)).toBe(true);
      // The single write went wholly before the snapshot (which then removed it with the three
      // old items) or waited for it and went after: never into the middle of it.
      expect(await extra).toBe('created');
      const extraAfter = staged.body.removed === 3;
      if (!extraAfter) expect(staged.body.removed).toBe(4);
      const final = extraAfter ? size + 1 : size;

      for (const run of runs) {
        const settled = await api.settled(source, run.id);
        expect(settled.status).toBe('completed');
        // The three old items, the snapshot's, or the snapshot's and the later write: never part of one.
        expect([3, 4, size, size + 1]).toContain((settled.counts as { added: number }).added);
      }
      const last = await api.startRun(source);
      expect(await api.settled(source, last.id)).toMatchObject({ counts: { added: final } });
      expect(await count(`SELECT count(*) AS n FROM staging_items WHERE source_id LIKE '${source}%'`)).toBe(
        final,
      );
    },
  );

  /** Makes every delete from `table` fail with a constraint error, until `allow` is called. */
  async function failDeletesOn(table: string) {
    const name = `fail_delete_${table}`;
    if (backend.name === 'SQLite') {
      await sql(
        `CREATE TRIGGER ${name} BEFORE DELETE ON ${table} BEGIN SELECT RAISE(ABORT, 'injected delete failure'); END`,
      );
      return { allow: () => sql(`DROP TRIGGER ${name}`) };
    }
    await sql(
      `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         RAISE EXCEPTION 'injected delete failure'; END $$`,
    );
    await sql(`CREATE TRIGGER ${name} BEFORE DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`);
    return {
      allow: async () => {
        await sql(`DROP TRIGGER ${name} ON ${table}`);
        await sql(`DROP FUNCTION ${name}()`);
      },
    };
  }

  it.skipIf(!backend.available)(
    'an apply answers for what it committed, even when the clean-up of the pinned set after it fails',
    async () => {
      const { api } = plane;
      const source = await api.createSource('noop clean-up');
      await api.put(source, 'x', 'X-ray.');
      expect(await api.runAndApply(source)).toMatchObject({ status: 'applied', generation: 1 });
      const again = await api.startRun(source);
      expect(await api.settled(source, again.id)).toMatchObject({ status: 'completed', noop: true });
      const deletes = await failDeletesOn('staging_run_items');
      try {
        const applied = await api.apply(source, again.id);
        expect(applied.status).toBe(202);
        expect(applied.body.run).toMatchObject({ status: 'applied', generation: 1 });
      } finally {
        await deletes.allow();
      }
    },
  );

  it.skipIf(!backend.available)(
    'a replaced set whose clean-up failed is swept by the jobs, and nothing visible goes with it',
    async () => {
      const { api } = plane;
      const size = CHUNKED_SNAPSHOT_MIN + 20;
      const source = await api.createSource('sweep');
      expect((await api.call('PUT', `/sources/${source}/items`, { items: items(size) })).status).toBe(200);
      // The clean-up after the flip fails (every delete from staging_items does, for now): the
      // snapshot still answers, and the set it replaced is left behind, unreachable.
      const failing = await failDeletesOn('staging_items');
      const restaged = await api.call('PUT', `/sources/${source}/items`, { items: items(size, 2) });
      expect(restaged.body).toMatchObject({ updated: size });
      const rows = `SELECT count(*) AS n FROM staging_items WHERE source_id LIKE '${source}%'`;
      expect(await count(rows)).toBe(2 * size);
      await failing.allow();

      // The jobs' sweep (every 200 ms here) drops the unreachable rows, and only those.
      await waitUntil(async () => (await count(rows)) <= size);
      expect(await count(rows)).toBe(size);
      const first = await api.call('GET', `/sources/${source}/items?limit=1`);
      expect(first.body.data[0].content).toBe(item(0, 2).content);
      expect(await api.runAndApply(source)).toMatchObject({ status: 'applied', counts: { added: size } });
    },
  );

  it.skipIf(!backend.available)(
    'a discovery over several chunks finds what the one-pass diff finds, and its changes list in key order',
    async () => {
      const { api } = plane;
      const size = CHUNKED_SNAPSHOT_MIN * 2 + 3;
      const source = await api.createSource('diff');
      await api.call('PUT', `/sources/${source}/items`, { items: items(size) });
      expect(await api.runAndApply(source)).toMatchObject({ status: 'applied', generation: 1 });
      // Every third item changed, every fifth dropped, 700 new ones past the end.
      const next = [
        ...items(size)
          .map((it, n) => (n % 3 === 0 ? item(n, 2) : it))
          .filter((_, n) => n % 5 !== 0),
        ...Array.from({ length: 700 }, (_, n) => item(size + n)),
      ];
      await api.call('PUT', `/sources/${source}/items`, { items: next });
      const expected = { added: 0, updated: 0, removed: 0, unchanged: 0 };
      for (let n = 0; n < size; n++) {
        if (n % 5 === 0) expected.removed++;
        else if (n % 3 === 0) expected.updated++;
        else expected.unchanged++;
      }
      expected.added = 700;
      const run = await api.startRun(source);
      const settled = await api.settled(source, run.id);
      expect(settled).toMatchObject({ status: 'completed', noop: false, counts: expected });
      const keys: string[] = [];
      for (let cursor: string | undefined; ; ) {
        const page = await api.call(
          'GET',
          `/sources/${source}/runs/${run.id}/diff?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
        );
        expect(page.status, JSON.stringify(page.body)).toBe(200);
        keys.push(...page.body.data.map((c: { key: string }) => c.key));
        cursor = page.body.nextCursor ?? undefined;
        if (!cursor) break;
      }
      expect(keys).toHaveLength(size + 700);
      expect(keys).toEqual([...keys].sort());
      // The copy and the diff left the source free: an item write goes through at once.
      expect(await api.put(source, 'after', 'Written after the run.')).toBe('created');
    },
  );
});
