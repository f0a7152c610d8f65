import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Backend, backends, startDataPlane } from './data-plane.js';

describe.each(backends)(
  'the data plane end to end over HTTP on $name (data-plane.md §4.1)',
  (backend: Backend) => {
    let plane: Awaited<ReturnType<typeof startDataPlane>>;

    beforeAll(async () => {
      if (backend.available) plane = await startDataPlane(backend);
    });
    afterAll(async () => {
      await plane?.close();
    });

    it.skipIf(!backend.available)(
      'stage a, b → run → added a, b → apply → generation 1; update a, delete b, add c → run → updated a, removed b, added c → apply → generation 2',
      async () => {
        const { api } = plane;
        const source = await api.createSource();
        expect(await api.put(source, 'a', 'Alpha.')).toBe('created');
        expect(await api.put(source, 'b', 'Bravo.')).toBe('created');
        expect(await api.put(source, 'a', 'Alpha.')).toBe('unchanged');

        const first = await api.startRun(source);
        expect(first.status).toBe('queued');
        expect(await api.settled(source, first.id)).toMatchObject({
          status: 'completed',
          noop: false,
          counts: { added: 2, updated: 0, removed: 0, unchanged: 0 },
          baseGeneration: null,
        });
        expect(await api.diff(source, first.id)).toEqual(['added a', 'added b']);
        expect((await api.apply(source, first.id)).status).toBe(202);
        expect(await api.settled(source, first.id)).toMatchObject({ status: 'applied', generation: 1 });
        expect(await api.activeGeneration(source)).toBe(1);

        expect(await api.put(source, 'a', 'Alpha, changed.')).toBe('updated');
        expect((await api.call('DELETE', `/sources/${source}/items/b`)).status).toBe(204);
        expect(await api.put(source, 'c', 'Charlie.')).toBe('created');
        const second = await api.startRun(source);
        expect(await api.settled(source, second.id)).toMatchObject({
          status: 'completed',
          counts: { added: 1, updated: 1, removed: 1, unchanged: 0 },
          baseGeneration: 1,
        });
        expect(await api.diff(source, second.id)).toEqual(['updated a', 'removed b', 'added c']);
        expect(await api.diff(source, second.id, 'removed')).toEqual(['removed b']);
        expect((await api.apply(source, second.id)).status).toBe(202);
        expect(await api.settled(source, second.id)).toMatchObject({ status: 'applied', generation: 2 });
        expect(await api.activeGeneration(source)).toBe(2);

        const generations = await api.call('GET', `/sources/${source}/generations`);
        expect(
          generations.body.data.map((g: { number: number; active: boolean }) => [g.number, g.active]),
        ).toEqual([
          [2, true],
          [1, false],
        ]);
        expect(generations.body.data[0]).toMatchObject({ runId: second.id, itemCount: 2 });
      },
    );

    it.skipIf(!backend.available)(
      'a run with nothing to change completes with noop: true, and its apply publishes nothing',
      async () => {
        const { api } = plane;
        const source = await api.createSource('quiet');
        await api.put(source, 'x', 'X-ray.');
        expect(await api.runAndApply(source)).toMatchObject({ status: 'applied', generation: 1 });
        const again = await api.startRun(source);
        expect(await api.settled(source, again.id)).toMatchObject({ status: 'completed', noop: true });
        const applied = await api.apply(source, again.id);
        expect(applied.status).toBe(202);
        expect(applied.body.run).toMatchObject({ status: 'applied', generation: 1 });
        expect(await api.activeGeneration(source)).toBe(1);
      },
    );

    it.skipIf(!backend.available)(
      'a run pins the staged set when it starts: later writes change neither its diff nor what its apply publishes',
      async () => {
        const { api } = plane;
        const source = await api.createSource('pinned');
        await api.put(source, 'a', 'A, first.');
        const run = await api.startRun(source);
        // Written after the run started, before (or while) discovery runs.
        await api.put(source, 'a', 'A, second.');
        await api.put(source, 'b', 'B.');
        expect(await api.settled(source, run.id)).toMatchObject({ status: 'completed', stagedRevision: 1 });
        expect(await api.diff(source, run.id)).toEqual(['added a']);
        await api.apply(source, run.id);
        expect(await api.settled(source, run.id)).toMatchObject({ status: 'applied', generation: 1 });
        // Generation 1 holds the first `a`: the next run sees the second as an update.
        const next = await api.startRun(source);
        await api.settled(source, next.id);
        expect(await api.diff(source, next.id)).toEqual(['updated a', 'added b']);
      },
    );

    it.skipIf(!backend.available)(
      'a snapshot of 10,000 items finishes, diffs correctly, and applies; then 300 changes diff as such',
      async () => {
        const { api } = plane;
        const source = await api.createSource('large');
        const item = (n: number, version = 1) => ({
          key: `doc-${String(n).padStart(5, '0')}`,
          title: `Page ${n}`,
          content: `Version ${version} of page ${n}. ${'Lorem ipsum dolor sit amet. '.repeat(4)}`,
        });
        const all = Array.from({ length: 10_000 }, (_, n) => item(n));
        const started = performance.now();
        const staged = await api.call('PUT', `/sources/${source}/items`, { items: all });
        expect(staged.status).toBe(200);
        expect(staged.body).toMatchObject({ created: 10_000, updated: 0, unchanged: 0, removed: 0 });
        const stagedIn = performance.now() - started;
        const run = await api.startRun(source);
        expect(await api.settled(source, run.id)).toMatchObject({
          status: 'completed',
          counts: { added: 10_000, updated: 0, removed: 0, unchanged: 0 },
        });
        const discoveredIn = performance.now() - started;
        expect(await api.diff(source, run.id, 'added')).toHaveLength(10_000);
        await api.apply(source, run.id);
        expect(await api.settled(source, run.id)).toMatchObject({ status: 'applied', generation: 1 });
        const appliedIn = performance.now() - started;
        const active = await api.call('GET', `/sources/${source}/generations/active`);
        expect(active.body.generation).toMatchObject({ number: 1, itemCount: 10_000 });
        expect(active.body.generation.passageCount).toBeGreaterThanOrEqual(10_000);

        // 100 updated, 100 removed (the last ones), 100 added.
        const changed = [
          ...all.slice(0, 100).map((_, n) => item(n, 2)),
          ...all.slice(100, 9_900),
          ...Array.from({ length: 100 }, (_, n) => item(10_000 + n)),
        ];
        const resnapshot = await api.call('PUT', `/sources/${source}/items`, { items: changed });
        expect(resnapshot.body).toMatchObject({ created: 100, updated: 100, unchanged: 9_800, removed: 100 });
        const second = await api.startRun(source);
        expect(await api.settled(source, second.id)).toMatchObject({
          counts: { added: 100, updated: 100, removed: 100, unchanged: 9_800 },
        });
        const removed = await api.diff(source, second.id, 'removed');
        expect(removed).toEqual(all.slice(9_900).map((i) => `removed ${i.key}`));
        console.log(
          `[large snapshot, ${backend.name}] 10,000 items: staged in ${stagedIn.toFixed(0)} ms, discovered by ` +
            `${discoveredIn.toFixed(0)} ms, applied (generation 1, ${active.body.generation.passageCount} passages) by ` +
            `${appliedIn.toFixed(0)} ms from the start`,
        );
      },
      120_000,
    );
  },
);
