import { unavailableError } from '@keyhook/core/store';
import { uniqueSchemaName } from '@keyhook/testing/postgres';
import { adminToken, waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { CHUNK_ROWS } from '../src/data-plane/db.js';
import type { ChunkStep, StagingJobHooks } from '../src/data-plane/jobs.js';
import { CHUNKED_SNAPSHOT_MIN } from '../src/data-plane/sources.js';
import { buildServer } from '../src/server.js';
import { Client, listen } from './client.js';
import {
  ALL_SCOPES,
  type Backend,
  backends,
  DataPlaneClient,
  type startDataPlane,
  startDataPlaneWithSql,
  withPostgres,
} from './data-plane.js';
import { dropSchema, postgresEnv } from './instances.js';

/**
 * The claims of chunked work (data-plane.md §5.4): a job renews its claim on a
 * run in every chunk, so work longer than the stale-claim time is not taken from a live job; a
 * job that lost its claim deletes nothing of the new holder's rows; an item write takes a stale
 * source claim away, so its holder's next chunk fails instead of making a stale set visible; a
 * run start whose run a job failed releases the source and fails the request. Between chunks the
 * test acts through `beforeChunk` (a test hook, outside any transaction), on the server's own
 * database over a connection of its own.
 */
/** Each chunk of the two-instance build takes this long: ten outlast its 1 s stale-claim time. */
const SLOW_CHUNK_MS = 150;

const item = (n: number, version = 1) => ({
  key: `doc-${String(n).padStart(5, '0')}`,
  title: `Page ${n}`,
  content: `Version ${version} of page ${n}. Some words to cut into a passage.`,
});
const items = (count: number, version = 1) => Array.from({ length: count }, (_, n) => item(n, version));

describe.each(backends)('claims of chunked work on $name', (backend: Backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  let sql: (text: string) => Promise<Record<string, unknown>[]>;
  let cleanUp: () => Promise<void>;
  /** What the server's beforeChunk hook does; set by each test. */
  let onChunk: ((step: ChunkStep) => Promise<void>) | undefined;
  const hooks: StagingJobHooks = { beforeChunk: (step) => onChunk?.(step) };

  beforeAll(async () => {
    if (!backend.available) return;
    ({ plane, sql, close: cleanUp } = await startDataPlaneWithSql(backend, { staging: { hooks } }));
  });
  afterAll(async () => {
    onChunk = undefined;
    await cleanUp?.();
  });

  const count = async (text: string) => Number((await sql(text))[0]?.n ?? 0);
  const claimedAt = async (runId: string) =>
    Number((await sql(`SELECT claimed_at FROM staging_runs WHERE id = '${runId}'`))[0]?.claimed_at);

  /** A source with `size` items applied as generation 1, then changed: the next run's build writes generation 2. */
  async function sourceWithChanges(name: string, size: number) {
    const { api } = plane;
    const source = await api.createSource(name);
    expect((await api.call('PUT', `/sources/${source}/items`, { items: items(size) })).status).toBe(200);
    expect(await api.runAndApply(source)).toMatchObject({ status: 'applied', generation: 1 });
    expect((await api.call('PUT', `/sources/${source}/items`, { items: items(size, 2) })).status).toBe(200);
    return source;
  }

  /**
   * Resolves once the job in progress has ended, its clean-up and its failApply included: one job
   * runs at a time per instance (StagingJobs), so a run queued now is discovered by a later one.
   */
  async function jobsCaughtUp() {
    const { api } = plane;
    const marker = await api.createSource('caught up');
    await api.put(marker, 'one', 'One.');
    const run = await api.startRun(marker);
    expect(await api.settled(marker, run.id)).toMatchObject({ status: 'completed' });
  }

  it.skipIf(!backend.available)('a build and a discovery renew their claim in every chunk', async () => {
    const { api } = plane;
    const size = CHUNK_ROWS * 4;
    const source = await sourceWithChanges('renewed', size);
    const seen: Record<string, number[]> = { discovery: [], build: [] };
    onChunk = async (step) => {
      if (step.sourceId !== source || !step.runId || !(step.work in seen)) return;
      const at = await claimedAt(step.runId);
      seen[step.work]!.push(at);
      // The next chunk's renewal writes a later time once the clock has moved past this one.
      await waitUntil(() => Date.now() > at);
    };
    const run = await api.startRun(source);
    await api.settled(source, run.id);
    expect((await api.apply(source, run.id)).status).toBe(202);
    expect(await api.settled(source, run.id)).toMatchObject({ status: 'applied', generation: 2 });
    onChunk = undefined;
    // The claim's time moves on from one chunk to the next: never the same for long.
    for (const times of Object.values(seen)) {
      expect(times.length).toBeGreaterThanOrEqual(3);
      for (let n = 1; n < times.length; n++) expect(times[n]!).toBeGreaterThan(times[n - 1]!);
    }
  });

  it.skipIf(!backend.available)(
    'a job the store failed mid-work gives its claim back: the next sweep takes the run, not the stale-claim time',
    async () => {
      const { api } = plane;
      const source = await sourceWithChanges('store away', CHUNK_ROWS * 2);
      const failed: string[] = [];
      onChunk = async (step) => {
        if (step.sourceId !== source || step.chunk !== 1) return;
        if ((step.work !== 'discovery' && step.work !== 'build') || failed.includes(step.work)) return;
        failed.push(step.work);
        // As a store that went away answers: the job's work stops with `unavailable`.
        throw unavailableError('the store went away (test)');
      };
      // The stale-claim time is a minute: settled() gives up after 20 s, so each run goes on
      // only because its job gave the claim back and a sweep (every 2 s) took it again.
      const run = await api.startRun(source);
      expect(await api.settled(source, run.id)).toMatchObject({ status: 'completed' });
      expect((await api.apply(source, run.id)).status).toBe(202);
      expect(await api.settled(source, run.id)).toMatchObject({ status: 'applied', generation: 2 });
      onChunk = undefined;
      expect(failed).toEqual(['discovery', 'build']);
    },
  );

  it.skipIf(!backend.available)(
    "a build that lost its claim and then fails deletes nothing of the new holder's rows",
    async () => {
      const { api } = plane;
      const size = CHUNK_ROWS * 4;
      const source = await sourceWithChanges('lost build', size);
      const run = await api.startRun(source);
      await api.settled(source, run.id);
      let stolen = false;
      onChunk = async (step) => {
        if (step.work !== 'build' || step.runId !== run.id || step.chunk !== 3 || stolen) return;
        stolen = true;
        // Another job takes the run (a newer claim) and writes a chunk of its own build of N+1.
        await sql(`UPDATE staging_runs SET claimed_at = ${Date.now() + 600_000} WHERE id = '${run.id}'`);
        await sql(
          `INSERT INTO staging_generation_items (source_id, generation, key, content_hash) VALUES ('${source}', 2, 'zz-new-holder', 'h')`,
        );
        await sql(
          `INSERT INTO staging_passages (source_id, generation, key, seq, text) VALUES ('${source}', 2, 'zz-new-holder', 0, 'x')`,
        );
        // The first job now fails: its clean-up must leave the new holder's build alone.
        throw new Error('injected failure after the claim was lost');
      };
      expect((await api.apply(source, run.id)).status).toBe(202);
      await waitUntil(() => stolen);
      await jobsCaughtUp(); // the failed job's clean-up and failApply, had they run unchecked
      const rows = `SELECT count(*) AS n FROM staging_generation_items WHERE source_id = '${source}' AND generation = 2`;
      // Its two chunks (now the new holder's, as far as anyone knows) and the new holder's row.
      expect(await count(rows)).toBe(2 * CHUNK_ROWS + 1);
      expect(
        await count(
          `SELECT count(*) AS n FROM staging_passages WHERE source_id = '${source}' AND generation = 2 AND key = 'zz-new-holder'`,
        ),
      ).toBe(1);
      // The run is not apply_failed: the job that lost it could not end it.
      expect((await api.call('GET', `/sources/${source}/runs/${run.id}`)).body.run.status).toBe('applying');

      // The "new holder" dies: its claim goes stale, the sweep takes the run and builds N+1 whole.
      onChunk = undefined;
      await sql(`UPDATE staging_runs SET claimed_at = 1 WHERE id = '${run.id}'`);
      expect(await api.settled(source, run.id)).toMatchObject({ status: 'applied', generation: 2 });
      expect(await count(rows)).toBe(size);
      const active = await api.call('GET', `/sources/${source}/generations/active`);
      expect(active.body.generation).toMatchObject({ number: 2, itemCount: size, passageCount: size });
    },
  );

  it.skipIf(!backend.available)(
    "a discovery that lost its claim before its clean-up deletes nothing of the new holder's changes",
    async () => {
      const { api } = plane;
      const size = CHUNK_ROWS * 3;
      const source = await sourceWithChanges('lost discovery', size);
      let stolen = false;
      let runId = '';
      onChunk = async (step) => {
        if (step.work !== 'discovery' || step.sourceId !== source || step.chunk !== 0 || stolen) return;
        stolen = true;
        runId = step.runId!;
        await sql(`UPDATE staging_runs SET claimed_at = ${Date.now() + 600_000} WHERE id = '${runId}'`);
        await sql(
          `INSERT INTO staging_run_changes (run_id, key, change, content_hash, previous_hash) VALUES ('${runId}', 'zz-new-holder', 'added', 'h', NULL)`,
        );
      };
      const run = await api.startRun(source);
      await waitUntil(() => stolen);
      await jobsCaughtUp();
      expect(
        await count(
          `SELECT count(*) AS n FROM staging_run_changes WHERE run_id = '${run.id}' AND key = 'zz-new-holder'`,
        ),
      ).toBe(1);
      expect((await api.call('GET', `/sources/${source}/runs/${run.id}`)).body.run.status).toBe('running');
      onChunk = undefined;
      await sql(`UPDATE staging_runs SET claimed_at = 1 WHERE id = '${runId}'`);
      expect(await api.settled(source, run.id)).toMatchObject({
        status: 'completed',
        counts: { updated: size, added: 0, removed: 0, unchanged: 0 },
      });
      expect(await count(`SELECT count(*) AS n FROM staging_run_changes WHERE run_id = '${run.id}'`)).toBe(
        size,
      );
    },
  );

  it.skipIf(!backend.available)(
    "an item write takes a stale snapshot claim away: the snapshot's next chunk fails, and the set stays whole",
    async () => {
      const { api } = plane;
      const source = await api.createSource('stale snapshot');
      const old = CHUNKED_SNAPSHOT_MIN + 1;
      expect((await api.call('PUT', `/sources/${source}/items`, { items: items(old) })).status).toBe(200);
      let late: string | undefined;
      onChunk = async (step) => {
        if (step.work !== 'snapshot' || step.sourceId !== source || step.chunk !== 2 || late) return;
        // The snapshot's writer looks dead (its claim is old); an item write comes in.
        await sql(`UPDATE staging_sources SET pending_at = 1 WHERE id = '${source}'`);
        late = await api.put(source, 'late', 'Written while the snapshot looked dead.');
      };
      const snapshot = await api.call('PUT', `/sources/${source}/items`, {
        items: items(CHUNKED_SNAPSHOT_MIN * 3, 2),
      });
      onChunk = undefined;
      expect(late).toBe('created');
      // The snapshot read the set before the write: it must not make that read visible.
      expect(snapshot.status, JSON.stringify(snapshot.body)).toBeGreaterThanOrEqual(500);
      const read = await api.call('GET', `/sources/${source}`);
      expect(read.body.source.stagedRevision).toBe(2);
      const visible = `(SELECT COALESCE(items_set, id) FROM staging_sources WHERE id = '${source}')`;
      expect(
        await count(`SELECT count(*) AS n FROM staging_items WHERE source_id = ${visible} AND key = 'late'`),
      ).toBe(1);
      expect((await api.call('GET', `/sources/${source}/items?limit=1`)).body.data[0].content).toBe(
        item(0).content,
      );
      const run = await api.startRun(source);
      expect(await api.settled(source, run.id)).toMatchObject({
        status: 'completed',
        counts: { added: old + 1 },
      });
      // Nothing of the unfinished set is visible, and it is swept.
      await waitUntil(
        async () =>
          (await count(`SELECT count(*) AS n FROM staging_items WHERE source_id LIKE '${source}%'`)) ===
          old + 1,
      );
    },
  );

  it.skipIf(!backend.available)(
    "an item write takes a stale run-start claim away: the start's copy fails instead of pinning a set that moved",
    async () => {
      const { api } = plane;
      const source = await api.createSource('stale start');
      expect(
        (await api.call('PUT', `/sources/${source}/items`, { items: items(CHUNK_ROWS * 2) })).status,
      ).toBe(200);
      let late: string | undefined;
      onChunk = async (step) => {
        if (step.work !== 'pin' || step.sourceId !== source || step.chunk !== 0 || late) return;
        await sql(`UPDATE staging_sources SET pending_at = 1 WHERE id = '${source}'`);
        late = await api.put(source, 'late', 'Written while the start looked dead.');
      };
      const start = await api.call('POST', `/sources/${source}/runs`);
      onChunk = undefined;
      expect(late).toBe('created');
      expect(start.status, JSON.stringify(start.body)).toBeGreaterThanOrEqual(500);
      expect(await count(`SELECT count(*) AS n FROM staging_runs WHERE source_id = '${source}'`)).toBe(0);
      const run = await api.startRun(source);
      expect(await api.settled(source, run.id)).toMatchObject({
        status: 'completed',
        counts: { added: CHUNK_ROWS * 2 + 1 },
      });
    },
  );

  it.skipIf(!backend.available)(
    'a run start whose run a job failed releases the source and fails the request',
    async () => {
      const { api } = plane;
      const source = await api.createSource('abandoned start');
      expect(
        (await api.call('PUT', `/sources/${source}/items`, { items: items(CHUNK_ROWS * 2) })).status,
      ).toBe(200);
      let released: unknown;
      onChunk = async (step) => {
        if (step.work !== 'pin' || step.sourceId !== source || step.chunk !== 0 || released !== undefined)
          return;
        // The start looks dead to the jobs: its run is failed (abandonStart).
        await sql(`UPDATE staging_runs SET claimed_at = 1 WHERE id = '${step.runId}'`);
        await waitUntil(
          async () =>
            (await sql(`SELECT status FROM staging_runs WHERE id = '${step.runId}'`))[0]?.status === 'failed',
        );
        released = (await sql(`SELECT pending_set FROM staging_sources WHERE id = '${source}'`))[0]
          ?.pending_set;
      };
      const start = await api.call('POST', `/sources/${source}/runs`);
      onChunk = undefined;
      // The source's claim went with the run, and the start did not answer with a run that is failed.
      expect(released).toBeNull();
      expect(start.status, JSON.stringify(start.body)).toBeGreaterThanOrEqual(500);
      expect(await api.put(source, 'after', 'Written at once.')).toBe('created');
    },
  );

  it.skipIf(!backend.available)(
    'whether a set is in use is an index seek on each of the source pointers',
    async () => {
      const indexes =
        backend.name === 'SQLite'
          ? await sql(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'staging_sources'`)
          : await sql(
              `SELECT indexname AS name FROM pg_indexes WHERE tablename = 'staging_sources' AND schemaname = current_schema()`,
            );
      const names = indexes.map((row) => row.name);
      expect(names).toContain('staging_sources_items_set');
      expect(names).toContain('staging_sources_pending_set');
      if (backend.name === 'SQLite') {
        const plan = await sql(
          `EXPLAIN QUERY PLAN SELECT 1 AS used FROM staging_sources WHERE items_set = 'x' OR pending_set = 'x' OR (id = 'x' AND items_set IS NULL)`,
        );
        expect(plan.map((row) => String(row.detail)).join('\n')).not.toMatch(/SCAN staging_sources/);
      }
    },
  );
});

/**
 * Two instances on one Postgres, with a stale-claim time shorter than the build: each sweeps
 * for stale claims every 100 ms. A job renewing its claim in every chunk keeps the run; without
 * that, the other instance takes it over and over, and the apply never ends.
 */
describe.skipIf(!withPostgres)(
  'two instances on one Postgres, a build longer than the stale-claim time',
  () => {
    const schema = uniqueSchemaName('ref_claims2');
    const started: { name: string; run: string; work: string }[] = [];
    const servers: Awaited<ReturnType<typeof buildServer>>[] = [];
    let api: DataPlaneClient;

    beforeAll(async () => {
      for (const name of ['A', 'B']) {
        const hooks: StagingJobHooks = {
          beforeChunk: async (step) => {
            if (step.work !== 'build' && step.work !== 'discovery') return;
            if (step.chunk === 0) started.push({ name, run: step.runId!, work: step.work });
            // Real time: the other instance judges the claim stale by its own wall clock.
            await new Promise((resolve) => setTimeout(resolve, SLOW_CHUNK_MS));
          },
        };
        servers.push(
          await buildServer(loadConfig(postgresEnv(schema)), {
            staging: { hooks, staleClaimMs: 1000, sweepMs: 100 },
          }),
        );
      }
      const client = await Client.forServer(await listen(servers[0]!.app));
      await listen(servers[1]!.app);
      const admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
      const { secret } = await client.createKey(admin, { name: 'all', scopes: ALL_SCOPES });
      api = new DataPlaneClient(client, secret);
    });
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.close()));
      await dropSchema(schema);
    });

    it('the apply completes once, with every row', async () => {
      // Ten chunks of 150 ms or more: the build outlasts the stale-claim time (1 s) by half.
      const size = CHUNK_ROWS * 10;
      const source = await api.createSource('long build');
      expect((await api.call('PUT', `/sources/${source}/items`, { items: items(size) })).status).toBe(200);
      const run = await api.startRun(source);
      const settle = async (from: string[]) => {
        let now: { status: string } & Record<string, unknown> = { status: 'unread' };
        await waitUntil(
          async () => {
            now = (await api.call('GET', `/sources/${source}/runs/${run.id}`)).body.run;
            return !from.includes(now.status);
          },
          15_000,
          () => `still ${now.status}: taken over ${started.length} times`,
        );
        return now;
      };
      expect(await settle(['queued', 'running'])).toMatchObject({
        status: 'completed',
        counts: { added: size },
      });
      expect((await api.apply(source, run.id)).status).toBe(202);
      expect(await settle(['applying'])).toMatchObject({ status: 'applied', generation: 1 });
      // One discovery and one build: no job was taken over.
      expect(started.filter((s) => s.run === run.id).map((s) => s.work)).toEqual(['discovery', 'build']);
      const active = await api.call('GET', `/sources/${source}/generations/active`);
      expect(active.body.generation).toMatchObject({ number: 1, itemCount: size, passageCount: size });
    }, 30_000);
  },
);
