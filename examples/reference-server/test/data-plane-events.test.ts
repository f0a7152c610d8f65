import { TestReceiver } from '@keyhook/testing/support';
import { verify } from '@keyhook/webhook-verify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunRecord } from '../src/data-plane/model.js';
import { type Backend, backends, startDataPlane } from './data-plane.js';

const KINDS = ['run.completed', 'run.failed', 'run.conflict', 'generation.published', 'apply.failed'];

/**
 * Issue 5 "Must hold": every event kind reaches a subscribed receiver and verifies; a stale run
 * conflicts; 20 concurrent applies make one generation. Failures are injected where the job
 * hooks allow (an item whose content says so), never by mocking the data plane.
 */
describe.each(backends)('data-plane events over real HTTP on $name', (backend: Backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  let receiver: TestReceiver;
  let secret: string;

  /** The verified events the receiver got, of one run. */
  const eventsOf = (runId: string) =>
    receiver.requests
      .map((request) => verify(request.body, request.headers['x-chatbot-signature'] as string, secret))
      .filter((event) => (event.data as { runId?: string }).runId === runId);

  /** Sources whose build waits at the gate until the test opens it. */
  const gated = new Map<string, Promise<void>>();
  /** Sources whose discovery, or whose build, the job hooks fail. */
  const failDiscovery = new Set<string>();
  const failBuild = new Set<string>();
  const failIn = (sources: Set<string>, what: string) => (run: RunRecord) => {
    if (sources.has(run.sourceId)) throw new Error(`injected failure: ${what}`);
  };

  beforeAll(async () => {
    if (!backend.available) return;
    receiver = await TestReceiver.start();
    plane = await startDataPlane(backend, {
      env: { KEYHOOK_RETRY_SCHEDULE: '50ms' },
      staging: {
        hooks: {
          afterDiscovery: failIn(failDiscovery, 'FAIL-DISCOVERY'),
          beforeSwitch: failIn(failBuild, 'FAIL-BUILD'),
          beforeBuild: (run) => gated.get(run.sourceId),
        },
      },
    });
    const created = await plane.running.client.request('POST', '/api/v1/admin/webhooks', plane.admin, {
      url: receiver.url('/hook'),
      events: KINDS,
    });
    expect(created.status).toBe(201);
    secret = created.body.secret;
  });
  afterAll(async () => {
    await plane?.close();
    await receiver?.close();
  });

  it.skipIf(!backend.available)(
    'run.completed and generation.published: delivered, verified, naming source, run and generation',
    async () => {
      const { api } = plane;
      const source = await api.createSource();
      await api.put(source, 'a', 'Alpha.');
      const run = await api.runAndApply(source);
      await receiver.waitFor(() => eventsOf(run.id).length === 2);
      const [completed, published] = eventsOf(run.id);
      expect(completed).toMatchObject({
        id: `evt_${run.id}_completed`,
        type: 'run.completed',
        data: { sourceId: source, runId: run.id, baseGeneration: null, noop: false, counts: { added: 1 } },
      });
      expect(published).toMatchObject({
        type: 'generation.published',
        data: { sourceId: source, runId: run.id, generation: 1, previousGeneration: null, items: 1 },
      });
    },
  );

  it.skipIf(!backend.available)('run.failed: a discovery that fails is failed, and says why', async () => {
    const { api } = plane;
    const source = await api.createSource();
    failDiscovery.add(source);
    await api.put(source, 'a', 'Alpha.');
    const run = await api.startRun(source);
    expect(await api.settled(source, run.id)).toMatchObject({
      status: 'failed',
      reason: 'injected failure: FAIL-DISCOVERY',
    });
    await receiver.waitFor(() => eventsOf(run.id).length === 1);
    expect(eventsOf(run.id)[0]).toMatchObject({
      type: 'run.failed',
      data: { sourceId: source, runId: run.id, reason: 'injected failure: FAIL-DISCOVERY' },
    });
  });

  it.skipIf(!backend.available)(
    'apply.failed: a build that fails leaves the active generation as it was',
    async () => {
      const { api } = plane;
      const source = await api.createSource();
      await api.put(source, 'a', 'Alpha.');
      expect(await api.runAndApply(source)).toMatchObject({ status: 'applied', generation: 1 });
      await api.put(source, 'b', 'Bravo.');
      failBuild.add(source);
      const run = await api.startRun(source);
      await api.settled(source, run.id);
      expect((await api.apply(source, run.id)).status).toBe(202);
      expect(await api.settled(source, run.id)).toMatchObject({
        status: 'apply_failed',
        reason: 'injected failure: FAIL-BUILD',
      });
      expect(await api.activeGeneration(source)).toBe(1);
      const generations = await api.call('GET', `/sources/${source}/generations`);
      expect(generations.body.data.map((g: { number: number }) => g.number)).toEqual([1]);
      await receiver.waitFor(() => eventsOf(run.id).some((e) => e.type === 'apply.failed'));
      expect(eventsOf(run.id).find((e) => e.type === 'apply.failed')).toMatchObject({
        data: { sourceId: source, runId: run.id, baseGeneration: 1, reason: 'injected failure: FAIL-BUILD' },
      });
      // The source is free again: the next apply goes through.
      failBuild.delete(source);
      await api.put(source, 'c', 'Charlie.');
      const next = await api.startRun(source);
      await api.settled(source, next.id);
      await api.apply(source, next.id);
      expect(await api.settled(source, next.id)).toMatchObject({ status: 'applied', generation: 2 });
    },
  );

  it.skipIf(!backend.available)(
    'a stale run: two runs from one base; applying the second after the first conflicts (409 run_conflict, run.conflict delivered), the active generation unchanged',
    async () => {
      const { api } = plane;
      const source = await api.createSource();
      await api.put(source, 'a', 'Alpha.');
      const first = await api.startRun(source);
      await api.put(source, 'b', 'Bravo.');
      const second = await api.startRun(source);
      await api.settled(source, first.id);
      await api.settled(source, second.id);
      await api.apply(source, first.id);
      expect(await api.settled(source, first.id)).toMatchObject({ status: 'applied', generation: 1 });

      const stale = await api.apply(source, second.id);
      expect(stale.status).toBe(409);
      expect(stale.body.error.code).toBe('run_conflict');
      expect(await api.activeGeneration(source)).toBe(1);
      expect((await api.call('GET', `/sources/${source}/runs/${second.id}`)).body.run).toMatchObject({
        status: 'conflict',
      });
      await receiver.waitFor(() => eventsOf(second.id).some((e) => e.type === 'run.conflict'));
      expect(eventsOf(second.id).find((e) => e.type === 'run.conflict')).toMatchObject({
        data: { sourceId: source, runId: second.id, baseGeneration: null, activeGeneration: 1 },
      });
      // Asking again answers the same, and publishes nothing more.
      expect((await api.apply(source, second.id)).body.error.code).toBe('run_conflict');
    },
  );

  it.skipIf(!backend.available)(
    'a run started against another base conflicts at once (expectedBaseGeneration)',
    async () => {
      const { api } = plane;
      const source = await api.createSource();
      await api.put(source, 'a', 'Alpha.');
      const run = await api.startRun(source, { expectedBaseGeneration: 3 });
      expect(run.status).toBe('conflict');
      await receiver.waitFor(() => eventsOf(run.id).length === 1);
      expect(eventsOf(run.id)[0]).toMatchObject({
        type: 'run.conflict',
        data: { runId: run.id, baseGeneration: null, activeGeneration: null },
      });
      expect((await api.startRun(source, { expectedBaseGeneration: 0 })).status).toBe('queued');
    },
  );

  it.skipIf(!backend.available)(
    '20 concurrent applies of one run make exactly one new generation',
    async () => {
      const { api } = plane;
      const source = await api.createSource();
      await api.put(source, 'a', 'Alpha.');
      const run = await api.startRun(source);
      await api.settled(source, run.id);
      const replies = await Promise.all(Array.from({ length: 20 }, () => api.apply(source, run.id)));
      const statuses = replies.map((reply) => reply.status);
      expect(statuses.filter((status) => status === 202)).toHaveLength(1);
      expect(statuses.filter((status) => status === 409)).toHaveLength(19);
      for (const reply of replies.filter((r) => r.status === 409)) {
        expect(['run_not_ready', 'apply_in_progress']).toContain(reply.body.error.code);
      }
      expect(await api.settled(source, run.id)).toMatchObject({ status: 'applied', generation: 1 });
      const generations = await api.call('GET', `/sources/${source}/generations`);
      expect(generations.body.data.map((g: { number: number }) => g.number)).toEqual([1]);
      await receiver.waitFor(() => eventsOf(run.id).length === 2);
      expect(eventsOf(run.id).filter((e) => e.type === 'generation.published')).toHaveLength(1);
    },
  );

  it.skipIf(!backend.available)(
    'while an apply holds the source: another apply is 409 apply_in_progress, and a new run conflicts at start',
    async () => {
      const { api } = plane;
      const source = await api.createSource();
      await api.put(source, 'a', 'Alpha.');
      const first = await api.startRun(source);
      const second = await api.startRun(source);
      await api.settled(source, first.id);
      await api.settled(source, second.id);
      let open!: () => void;
      gated.set(
        source,
        new Promise<void>((resolve) => {
          open = resolve;
        }),
      );
      expect((await api.apply(source, first.id)).status).toBe(202);
      await api.settled(source, first.id, ['queued', 'running']); // applying, held at the gate
      const blocked = await api.apply(source, second.id);
      expect(blocked.status).toBe(409);
      expect(blocked.body.error).toMatchObject({ code: 'apply_in_progress', details: [{ runId: first.id }] });
      const started = await api.startRun(source);
      expect(started.status).toBe('conflict');
      open();
      expect(await api.settled(source, first.id)).toMatchObject({ status: 'applied', generation: 1 });
      await receiver.waitFor(() => eventsOf(started.id).length === 1);
      expect(eventsOf(started.id)[0]).toMatchObject({ type: 'run.conflict', data: { runId: started.id } });
      // The second run's base (none) is stale now: it conflicts when asked.
      expect((await api.apply(source, second.id)).body.error.code).toBe('run_conflict');
    },
  );
});
