import { adminToken, waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChunkStep } from '../src/data-plane/jobs.js';
import type { Reply } from './client.js';
import { ALL_SCOPES, type Backend, backends, startDataPlaneWithSql } from './data-plane.js';
import { keyed, runEventsIn, runsOf } from './keyed-requests.js';

/**
 * Issue 41 point 3: the data plane's POSTs take `Idempotency-Key` with keyhook's rules
 * (docs/http-api.md §4.3 rules 2–4, 9; data-plane.md §3.4). Every case runs over real HTTP on
 * SQLite and on Postgres, and counts what the database holds: runs through the API, events in
 * keyhook's store.
 */
describe.each(backends)('Idempotency-Key on the data plane on $name', (backend: Backend) => {
  let env: Awaited<ReturnType<typeof startDataPlaneWithSql>>;

  /** Sources whose run start waits in its copy until the test opens the gate. */
  const gates = new Map<string, { entered: () => void; opened: Promise<void> }>();
  /** Sources whose next run start fails in its copy. */
  const failingCopies = new Set<string>();
  const beforeChunk = async (step: ChunkStep) => {
    if (step.work !== 'pin') return;
    if (failingCopies.delete(step.sourceId)) throw new Error('injected failure: the copy');
    const gate = gates.get(step.sourceId);
    if (!gate) return;
    gates.delete(step.sourceId);
    gate.entered();
    await gate.opened;
  };
  const gate = (sourceId: string) => {
    let enter = () => {};
    let open = () => {};
    const entered = new Promise<void>((resolve) => (enter = resolve));
    const opened = new Promise<void>((resolve) => (open = resolve));
    gates.set(sourceId, { entered: enter, opened });
    return { entered, open };
  };

  const send = (method: string, path: string, key: string | undefined, body?: unknown, apiKey?: string) =>
    keyed(env.plane.running.client, apiKey ?? env.plane.key, method, path, key, body);
  const replayed = (reply: Reply) => reply.headers.get('idempotent-replayed');
  const sourcesNamed = async (name: string) => {
    const reply = await send('GET', '/sources?limit=100', undefined);
    return (reply.body.data as { name: string }[]).filter((source) => source.name === name);
  };

  beforeAll(async () => {
    if (!backend.available) return;
    env = await startDataPlaneWithSql(backend, { staging: { hooks: { beforeChunk } } });
  });
  afterAll(async () => {
    await env?.close();
  });

  it.skipIf(!backend.available)(
    'the same key and body twice: one run, one run.* event, and the first answer again with Idempotent-Replayed: true',
    async () => {
      const source = await env.plane.api.createSource();
      const first = await send('POST', `/sources/${source}/runs`, 'start-1', {});
      expect(first.status, first.text).toBe(202);
      expect(replayed(first)).toBeNull();
      const again = await send('POST', `/sources/${source}/runs`, 'start-1', {});
      expect(again.status).toBe(202);
      expect(again.text).toBe(first.text);
      expect(replayed(again)).toBe('true');
      expect(again.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(again.headers.get('x-request-id')).toMatch(/^req_/);
      expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));

      expect((await runsOf(env.plane.running.client, env.plane.key, source)).map((run) => run.id)).toEqual([
        first.body.run.id,
      ]);
      // Its run.completed commits with the run's status: once the run reads completed, it is there.
      expect(await env.plane.api.settled(source, first.body.run.id)).toMatchObject({ status: 'completed' });
      expect(await runEventsIn(env.sql, source)).toEqual([`evt_${first.body.run.id}_completed`]);
    },
  );

  it.skipIf(!backend.available)(
    'the same key with another body, or on another route, is 409 idempotency_conflict and writes nothing',
    async () => {
      const source = await env.plane.api.createSource();
      expect((await send('POST', `/sources/${source}/runs`, 'conflicting', {})).status).toBe(202);
      const other = await send('POST', `/sources/${source}/runs`, 'conflicting', {
        expectedBaseGeneration: 3,
      });
      expect(other.status).toBe(409);
      expect(other.body.error.code).toBe('idempotency_conflict');
      expect(replayed(other)).toBeNull();
      const elsewhere = await send('POST', '/sources', 'conflicting', { name: 'never-made' });
      expect(elsewhere.status).toBe(409);
      expect(elsewhere.body.error.code).toBe('idempotency_conflict');
      // Checked before the body: a key used before answers even an invalid request.
      const invalid = await send('POST', `/sources/${source}/runs`, 'conflicting', { nonsense: true });
      expect(invalid.body.error.code).toBe('idempotency_conflict');

      expect(await runsOf(env.plane.running.client, env.plane.key, source)).toHaveLength(1);
      expect(await sourcesNamed('never-made')).toEqual([]);
    },
  );

  it.skipIf(!backend.available)(
    '10 concurrent starts with one key make exactly one run; the others hear the first answer or 409 idempotency_in_progress',
    async () => {
      const source = await env.plane.api.createSource();
      const replies = await Promise.all(
        Array.from({ length: 10 }, () => send('POST', `/sources/${source}/runs`, 'ten-starts', {})),
      );
      const runs = await runsOf(env.plane.running.client, env.plane.key, source);
      expect(runs).toHaveLength(1);
      const answered = replies.filter((reply) => reply.status === 202);
      expect(answered.filter((reply) => replayed(reply) === null)).toHaveLength(1);
      for (const reply of answered) expect(reply.body.run.id).toBe(runs[0]!.id);
      expect(new Set(answered.map((reply) => reply.text)).size).toBe(1);
      for (const reply of replies.filter((r) => r.status !== 202)) {
        expect(reply.status, reply.text).toBe(409);
        expect(reply.body.error.code).toBe('idempotency_in_progress');
      }
      await env.plane.api.settled(source, runs[0]!.id);
      expect(await runEventsIn(env.sql, source)).toEqual([`evt_${runs[0]!.id}_completed`]);
    },
  );

  it.skipIf(!backend.available)(
    '10 concurrent creates with one key make exactly one source, and all ten hear its 201',
    async () => {
      const replies = await Promise.all(
        Array.from({ length: 10 }, () => send('POST', '/sources', 'ten-creates', { name: 'ten-creates' })),
      );
      expect(replies.map((reply) => reply.status)).toEqual(Array(10).fill(201));
      expect(new Set(replies.map((reply) => reply.text)).size).toBe(1);
      expect(replies.filter((reply) => replayed(reply) === null)).toHaveLength(1);
      expect((await sourcesNamed('ten-creates')).map((source) => source)).toHaveLength(1);
    },
  );

  it.skipIf(!backend.available)(
    "a key is per tenant: another tenant's same key and body writes its own; another API key of the tenant hears the first answer",
    async () => {
      const { client } = env.plane.running;
      const globexAdmin = await adminToken({ tenantId: 'globex', subject: 'ops' });
      const globex = (await client.createKey(globexAdmin, { name: 'globex', scopes: ALL_SCOPES })).secret;
      const acmeSecond = (await client.createKey(env.plane.admin, { name: 'second', scopes: ALL_SCOPES }))
        .secret;
      const body = { name: 'per-tenant' };

      const acme = await send('POST', '/sources', 'per-tenant', body);
      expect(acme.status).toBe(201);
      const theirs = await send('POST', '/sources', 'per-tenant', body, globex);
      expect(theirs.status).toBe(201);
      expect(replayed(theirs)).toBeNull();
      expect(theirs.body.source.id).not.toBe(acme.body.source.id);

      const theirsAgain = await send('POST', '/sources', 'per-tenant', body, globex);
      expect(replayed(theirsAgain)).toBe('true');
      expect(theirsAgain.text).toBe(theirs.text);
      const acmeAgain = await send('POST', '/sources', 'per-tenant', body, acmeSecond);
      expect(replayed(acmeAgain)).toBe('true');
      expect(acmeAgain.text).toBe(acme.text);
      expect(await sourcesNamed('per-tenant')).toHaveLength(1);
    },
  );

  it.skipIf(!backend.available)(
    'a malformed key is 400 validation_failed naming Idempotency-Key on every POST and writes nothing; PUT, PATCH and DELETE ignore the header',
    async () => {
      const source = await env.plane.api.createSource();
      await env.plane.api.put(source, 'a', 'Alpha.');
      const run = await env.plane.api.startRun(source);
      await env.plane.api.settled(source, run.id);
      const malformed = ['', 'x'.repeat(256), 'tab\there', 'caf\u00e9'];
      const posts: [string, unknown][] = [
        ['/sources', { name: 'malformed' }],
        [`/sources/${source}/runs`, {}],
        [`/sources/${source}/runs/${run.id}/apply`, undefined],
        [`/sources/${source}/items/batch`, { upsert: [{ key: 'b', content: 'Bravo.' }] }],
        [`/sources/${source}/deactivate`, undefined],
      ];
      for (const key of malformed) {
        for (const [path, body] of posts) {
          const reply = await send('POST', path, key, body);
          expect(reply.status, `${path} ${JSON.stringify(key)}`).toBe(400);
          expect(reply.body.error).toMatchObject({
            code: 'validation_failed',
            details: [{ path: 'Idempotency-Key' }],
          });
        }
      }
      expect(await sourcesNamed('malformed')).toEqual([]);
      expect(await runsOf(env.plane.running.client, env.plane.key, source)).toHaveLength(1);
      const read = await send('GET', `/sources/${source}`, undefined);
      expect(read.body.source).toMatchObject({ status: 'active', stagedRevision: 1 });

      // Idempotent as they are: the header changes nothing, malformed or not.
      const put = await send('PUT', `/sources/${source}/items/b`, 'caf\u00e9', { content: 'Bravo.' });
      expect(put.status).toBe(201);
      const putAgain = await send('PUT', `/sources/${source}/items/b`, 'put-b', { content: 'Bravo.' });
      expect([putAgain.status, putAgain.body.result, replayed(putAgain)]).toEqual([200, 'unchanged', null]);
      const patch = await send('PATCH', `/sources/${source}`, 'put-b', { name: 'renamed' });
      expect([patch.status, replayed(patch)]).toEqual([200, null]);
      expect((await send('DELETE', `/sources/${source}/items/b`, 'put-b')).status).toBe(204);
      expect((await send('DELETE', `/sources/${source}/items/b`, 'put-b')).status).toBe(404);
    },
  );

  it.skipIf(!backend.available)(
    'every POST takes it: a batch, an apply and a deactivation answer their first answer again, and write once',
    async () => {
      const source = await env.plane.api.createSource();
      const batch = { upsert: [{ key: 'a', content: 'Alpha.' }], delete: ['gone'] };
      const batched = await send('POST', `/sources/${source}/items/batch`, 'batch-1', batch);
      expect(batched.body.results).toEqual([
        { key: 'a', result: 'created' },
        { key: 'gone', result: 'not_found' },
      ]);
      const batchedAgain = await send('POST', `/sources/${source}/items/batch`, 'batch-1', batch);
      expect([batchedAgain.status, batchedAgain.text, replayed(batchedAgain)]).toEqual([
        200,
        batched.text,
        'true',
      ]);

      const run = await env.plane.api.startRun(source);
      await env.plane.api.settled(source, run.id);
      const applied = await send('POST', `/sources/${source}/runs/${run.id}/apply`, 'apply-1');
      expect(applied.status, applied.text).toBe(202);
      const appliedAgain = await send('POST', `/sources/${source}/runs/${run.id}/apply`, 'apply-1');
      expect([appliedAgain.status, appliedAgain.text, replayed(appliedAgain)]).toEqual([
        202,
        applied.text,
        'true',
      ]);
      expect(await env.plane.api.settled(source, run.id)).toMatchObject({ status: 'applied', generation: 1 });

      const deactivated = await send('POST', `/sources/${source}/deactivate`, 'off-1');
      expect(deactivated.status).toBe(200);
      const deactivatedAgain = await send('POST', `/sources/${source}/deactivate`, 'off-1');
      expect([deactivatedAgain.text, replayed(deactivatedAgain)]).toEqual([deactivated.text, 'true']);
      const read = await send('GET', `/sources/${source}`, undefined);
      expect(read.body.source).toMatchObject({ status: 'inactive', stagedRevision: 1, activeGeneration: 1 });
    },
  );

  it.skipIf(!backend.available)(
    "a refusal the source's state decided is kept; one that says 'not now' (run_not_ready) frees the key",
    async () => {
      const inactive = await env.plane.api.createSource();
      await send('POST', `/sources/${inactive}/deactivate`, undefined);
      const refused = await send('POST', `/sources/${inactive}/runs`, 'refused', {});
      expect([refused.status, refused.body.error.code]).toEqual([409, 'source_inactive']);
      const refusedAgain = await send('POST', `/sources/${inactive}/runs`, 'refused', {});
      expect([refusedAgain.status, refusedAgain.text, replayed(refusedAgain)]).toEqual([
        409,
        refused.text,
        'true',
      ]);

      const source = await env.plane.api.createSource();
      await env.plane.api.put(source, 'a', 'Alpha.');
      const copying = gate(source);
      const starting = env.plane.api.startRun(source);
      await copying.entered; // the run is queued, its copy not done
      const runId = (await runsOf(env.plane.running.client, env.plane.key, source))[0]!.id;
      const early = await send('POST', `/sources/${source}/runs/${runId}/apply`, 'apply-early');
      expect([early.status, early.body.error.code]).toEqual([409, 'run_not_ready']);
      copying.open();
      await starting;
      await env.plane.api.settled(source, runId);
      const later = await send('POST', `/sources/${source}/runs/${runId}/apply`, 'apply-early');
      expect([later.status, replayed(later)]).toEqual([202, null]);
      const laterAgain = await send('POST', `/sources/${source}/runs/${runId}/apply`, 'apply-early');
      expect([laterAgain.text, replayed(laterAgain)]).toEqual([later.text, 'true']);
      expect(await env.plane.api.settled(source, runId)).toMatchObject({ status: 'applied' });
    },
  );

  it.skipIf(!backend.available)(
    'a twin while the start copies its set hears 409 idempotency_in_progress; once it answered, the first answer',
    async () => {
      const source = await env.plane.api.createSource();
      const copying = gate(source);
      const first = send('POST', `/sources/${source}/runs`, 'copying', {});
      await copying.entered;
      const twin = await send('POST', `/sources/${source}/runs`, 'copying', {});
      expect([twin.status, twin.body.error.code]).toEqual([409, 'idempotency_in_progress']);
      copying.open();
      const answered = await first;
      expect(answered.status).toBe(202);
      const after = await send('POST', `/sources/${source}/runs`, 'copying', {});
      expect([after.text, replayed(after)]).toEqual([answered.text, 'true']);
      expect(await runsOf(env.plane.running.client, env.plane.key, source)).toHaveLength(1);
    },
  );

  it.skipIf(!backend.available)(
    'a start whose copy fails frees its key with its run: the retry starts a run of its own, kept from then on',
    async () => {
      const source = await env.plane.api.createSource();
      failingCopies.add(source);
      const failed = await send('POST', `/sources/${source}/runs`, 'copy-fails', {});
      expect([failed.status, failed.body.error.code]).toEqual([500, 'internal_error']);
      expect(await runsOf(env.plane.running.client, env.plane.key, source)).toEqual([]);
      const retried = await send('POST', `/sources/${source}/runs`, 'copy-fails', {});
      expect([retried.status, replayed(retried)]).toEqual([202, null]);
      const again = await send('POST', `/sources/${source}/runs`, 'copy-fails', {});
      expect([again.text, replayed(again)]).toEqual([retried.text, 'true']);
      expect(await runsOf(env.plane.running.client, env.plane.key, source)).toHaveLength(1);
    },
  );

  it.skipIf(!backend.available)(
    "an expired key is purged by the jobs' sweep, off the request path, and is free again; a live one stays",
    async () => {
      const body = { name: 'expiring' };
      const old = await send('POST', '/sources', 'expired-key', body);
      const live = await send('POST', '/sources', 'live-key', { name: 'live' });
      expect([old.status, live.status]).toEqual([201, 201]);
      // 24 hours later, as the key's row sees it.
      await env.sql(
        "UPDATE staging_idempotency_keys SET expires_at = created_at - 1 WHERE key = 'expired-key'",
      );
      const keys = async () =>
        (await env.sql('SELECT key FROM staging_idempotency_keys ORDER BY key')).map((row) => row['key']);
      await waitUntil(
        async () => !(await keys()).includes('expired-key'),
        10_000,
        () => 'the expired key is still stored',
      );
      expect(await keys()).toContain('live-key');

      const fresh = await send('POST', '/sources', 'expired-key', body);
      expect([fresh.status, replayed(fresh)]).toEqual([201, null]);
      expect(fresh.body.source.id).not.toBe(old.body.source.id);
      expect(replayed(await send('POST', '/sources', 'live-key', { name: 'live' }))).toBe('true');
    },
  );
});

describe.each(backends)(
  'Idempotency-Key of a run start abandoned by a dead process on $name',
  (backend: Backend) => {
    let env: Awaited<ReturnType<typeof startDataPlaneWithSql>>;
    /** The copy that never goes on: the process that made it is as good as dead. */
    let stuck: { entered: Promise<void>; enter: () => void; opened: Promise<void>; open: () => void };

    beforeAll(async () => {
      if (!backend.available) return;
      let enter = () => {};
      let open = () => {};
      const entered = new Promise<void>((resolve) => (enter = resolve));
      const opened = new Promise<void>((resolve) => (open = resolve));
      stuck = { entered, enter, opened, open };
      let first = true;
      env = await startDataPlaneWithSql(backend, {
        staging: {
          staleClaimMs: 500,
          hooks: {
            beforeChunk: async (step) => {
              if (step.work !== 'pin' || !first) return;
              first = false;
              stuck.enter();
              await stuck.opened;
            },
          },
        },
      });
    });
    afterAll(async () => {
      stuck?.open();
      await env?.close();
    });

    it.skipIf(!backend.available)(
      'the sweep fails the run (run.failed) and frees its key: the retry starts a run of its own, kept from then on',
      async () => {
        const { client } = env.plane.running;
        const source = await env.plane.api.createSource();
        const send = (key: string) =>
          keyed(client, env.plane.key, 'POST', `/sources/${source}/runs`, key, {});
        const abandoned = send('abandoned');
        await stuck.entered;
        const runId = (await runsOf(client, env.plane.key, source))[0]!.id;
        expect(await env.plane.api.settled(source, runId)).toMatchObject({ status: 'failed' });
        expect(await runEventsIn(env.sql, source)).toEqual([`evt_${runId}_failed`]);

        const retried = await send('abandoned');
        expect([retried.status, retried.headers.get('idempotent-replayed')]).toEqual([202, null]);
        expect(retried.body.run.id).not.toBe(runId);
        // The stuck start goes on at last, finds its run taken from it, and fails: its key stays the retry's.
        stuck.open();
        expect((await abandoned).status).toBe(500);
        const again = await send('abandoned');
        expect([again.text, again.headers.get('idempotent-replayed')]).toEqual([retried.text, 'true']);
        expect((await runsOf(client, env.plane.key, source)).map((run) => run.id)).toEqual([
          retried.body.run.id,
          runId,
        ]);
      },
    );
  },
);
