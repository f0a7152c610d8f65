import { adminToken } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALL_SCOPES, type Backend, backends, DataPlaneClient, startDataPlane } from './data-plane.js';

describe.each(backends)(
  'data-plane resources over HTTP on $name (data-plane.md §4.1)',
  (backend: Backend) => {
    let plane: Awaited<ReturnType<typeof startDataPlane>>;
    let api: DataPlaneClient;

    beforeAll(async () => {
      if (!backend.available) return;
      plane = await startDataPlane(backend);
      api = plane.api;
    });
    afterAll(async () => {
      await plane?.close();
    });

    it.skipIf(!backend.available)(
      'sources: create 201, read, list newest first with a cursor, PATCH, deactivate',
      async () => {
        const created = await api.call('POST', '/sources', {
          name: '  Handbook ',
          description: 'the staff handbook',
        });
        expect(created.status).toBe(201);
        expect(created.body.source).toMatchObject({
          name: 'Handbook',
          description: 'the staff handbook',
          status: 'active',
          activeGeneration: null,
          stagedRevision: 0,
        });
        const id = created.body.source.id;
        expect(id).toMatch(/^src_[0-9a-z]{26}$/);
        expect((await api.call('GET', `/sources/${id}`)).body.source.id).toBe(id);
        const others = [await api.createSource('one'), await api.createSource('two')];

        const first = await api.call('GET', '/sources?limit=2');
        expect(first.body.data.map((s: { id: string }) => s.id)).toEqual([others[1], others[0]]);
        const next = await api.call('GET', `/sources?limit=2&cursor=${first.body.nextCursor}`);
        expect(next.body.data.map((s: { id: string }) => s.id)[0]).toBe(id);

        const patched = await api.call('PATCH', `/sources/${id}`, { description: null });
        expect(patched.body.source).toMatchObject({ name: 'Handbook', description: null });
        expect((await api.call('PATCH', `/sources/${id}`, {})).status).toBe(400);
        expect((await api.call('PATCH', `/sources/${id}`, { status: 'inactive' })).status).toBe(400);

        const deactivated = await api.call('POST', `/sources/${id}/deactivate`);
        expect(deactivated.body.source.status).toBe('inactive');
        expect((await api.call('POST', `/sources/${id}/deactivate`)).body.source.status).toBe('inactive');
      },
    );

    it.skipIf(!backend.available)(
      'an inactive source refuses item writes and runs with 409 source_inactive; reads still work',
      async () => {
        const id = await api.createSource();
        await api.put(id, 'a', 'Alpha.');
        await api.call('POST', `/sources/${id}/deactivate`);
        for (const [method, path, body] of [
          ['PUT', `/sources/${id}/items/b`, { content: 'Bravo.' }],
          ['DELETE', `/sources/${id}/items/a`, undefined],
          ['POST', `/sources/${id}/items/batch`, { delete: ['a'] }],
          ['PUT', `/sources/${id}/items`, { items: [{ key: 'a', content: 'Alpha.' }] }],
          ['POST', `/sources/${id}/runs`, {}],
        ] as const) {
          const reply = await api.call(method, path, body);
          expect(reply.status, `${method} ${path}`).toBe(409);
          expect(reply.body.error.code).toBe('source_inactive');
        }
        expect((await api.call('GET', `/sources/${id}/items`)).body.data).toHaveLength(1);
      },
    );

    it.skipIf(!backend.available)(
      'items: upsert says created, updated or unchanged by content hash; list in key order with a cursor; delete',
      async () => {
        const id = await api.createSource();
        const first = await api.call('PUT', `/sources/${id}/items/doc-1`, {
          title: 'One',
          content: 'First.',
          url: 'https://docs.example.com/1',
          metadata: { lang: 'en', tags: ['a'] },
        });
        expect(first.status).toBe(201);
        expect(first.body).toMatchObject({
          result: 'created',
          item: { key: 'doc-1', title: 'One', metadata: { lang: 'en' } },
        });
        const hash = first.body.item.contentHash;
        expect(hash).toMatch(/^[0-9a-f]{64}$/);
        // The same fields, the metadata's keys in another order: unchanged.
        const same = await api.call('PUT', `/sources/${id}/items/doc-1`, {
          metadata: { tags: ['a'], lang: 'en' },
          url: 'https://docs.example.com/1',
          content: 'First.',
          title: 'One',
        });
        expect(same.status).toBe(200);
        expect(same.body).toMatchObject({ result: 'unchanged', item: { contentHash: hash } });
        const retitled = await api.call('PUT', `/sources/${id}/items/doc-1`, {
          title: 'Uno',
          content: 'First.',
        });
        expect(retitled.body.result).toBe('updated');
        expect(retitled.body.item.contentHash).not.toBe(hash);
        expect(await api.put(id, 'k'.repeat(256), 'the longest key')).toBe('created');
        expect((await api.call('DELETE', `/sources/${id}/items/${'k'.repeat(256)}`)).status).toBe(204);
        for (const key of ['doc-3', 'doc-2', 'A_b.c~d']) await api.put(id, key, key);
        const page = await api.call('GET', `/sources/${id}/items?limit=2`);
        expect(page.body.data.map((i: { key: string }) => i.key)).toEqual(['A_b.c~d', 'doc-1']);
        const rest = await api.call('GET', `/sources/${id}/items?limit=2&cursor=${page.body.nextCursor}`);
        expect(rest.body).toMatchObject({ data: [{ key: 'doc-2' }, { key: 'doc-3' }], nextCursor: null });
        expect((await api.call('DELETE', `/sources/${id}/items/doc-2`)).status).toBe(204);
        expect((await api.call('DELETE', `/sources/${id}/items/doc-2`)).status).toBe(404);
        for (const bad of ['has space', 'x'.repeat(257), 'slash%2Fin']) {
          expect(
            (await api.call('PUT', `/sources/${id}/items/${encodeURIComponent(bad)}`, { content: 'x' }))
              .status,
          ).toBe(400);
        }
        expect((await api.call('PUT', `/sources/${id}/items/k`, { content: 1 })).status).toBe(400);
        expect((await api.call('PUT', `/sources/${id}/items/k`, { content: 'x', extra: true })).status).toBe(
          400,
        );
      },
    );

    it.skipIf(!backend.available)(
      'batch: one result per operation in order; a bad operation fails alone; at most 1000',
      async () => {
        const id = await api.createSource();
        await api.put(id, 'keep', 'Keep.');
        const reply = await api.call('POST', `/sources/${id}/items/batch`, {
          upsert: [
            { key: 'a', content: 'Alpha.' },
            { key: 'bad key', content: 'x' },
            { key: 'keep', content: 'Keep.' },
            { key: 'huge', content: 'x'.repeat(1024 * 1024 + 1) },
          ],
          delete: ['keep', 'missing', 42],
        });
        expect(reply.status).toBe(200);
        expect(reply.body.results).toEqual([
          { key: 'a', result: 'created' },
          { key: 'bad key', error: expect.objectContaining({ code: 'validation_failed' }) },
          { key: 'keep', result: 'unchanged' },
          { key: 'huge', error: expect.objectContaining({ code: 'payload_too_large' }) },
          { key: 'keep', result: 'deleted' },
          { key: 'missing', result: 'not_found' },
          { key: null, error: expect.objectContaining({ code: 'validation_failed' }) },
        ]);
        const items = await api.call('GET', `/sources/${id}/items`);
        expect(items.body.data.map((i: { key: string }) => i.key)).toEqual(['a']);
        const tooMany = await api.call('POST', `/sources/${id}/items/batch`, {
          delete: Array.from({ length: 1001 }, (_, i) => `k${i}`),
        });
        expect(tooMany.status).toBe(400);
        expect((await api.call('POST', `/sources/${id}/items/batch`, {})).status).toBe(400);
      },
    );

    it.skipIf(!backend.available)(
      'snapshot: the staged set becomes exactly these; an empty one needs ?allowEmpty=true',
      async () => {
        const id = await api.createSource();
        for (const key of ['a', 'b', 'c']) await api.put(id, key, key);
        const reply = await api.call('PUT', `/sources/${id}/items`, {
          items: [
            { key: 'a', content: 'a' },
            { key: 'b', content: 'B changed' },
            { key: 'd', content: 'd' },
          ],
        });
        expect(reply.status).toBe(200);
        expect(reply.body).toMatchObject({ created: 1, updated: 1, unchanged: 1, removed: 1 });
        const keys = async () =>
          (await api.call('GET', `/sources/${id}/items`)).body.data.map((i: { key: string }) => i.key);
        expect(await keys()).toEqual(['a', 'b', 'd']);
        const empty = await api.call('PUT', `/sources/${id}/items`, { items: [] });
        expect(empty.status).toBe(400);
        expect(empty.body.error.details[0].path).toBe('items');
        expect(await keys()).toEqual(['a', 'b', 'd']);
        expect(
          (
            await api.client.request('PUT', `/api/v1/sources/${id}/items?allowEmpty=true`, api.key, {
              items: [],
            })
          ).body,
        ).toMatchObject({ removed: 3 });
        expect(await keys()).toEqual([]);
        const twice = await api.call('PUT', `/sources/${id}/items`, {
          items: [
            { key: 'x', content: '1' },
            { key: 'x', content: '2' },
          ],
        });
        expect(twice.status).toBe(400);
      },
    );

    it.skipIf(!backend.available)(
      'limits: content over 1 MiB → 413; a body over 10 MiB → 413; malformed JSON → 400; another media type → 415',
      async () => {
        const id = await api.createSource();
        const big = await api.call('PUT', `/sources/${id}/items/big`, {
          content: 'é'.repeat(512 * 1024 + 1),
        });
        expect(big.status).toBe(413);
        expect(big.body.error.code).toBe('payload_too_large');
        const items = Array.from({ length: 11 }, (_, i) => ({
          key: `k${i}`,
          content: 'x'.repeat(1024 * 1024 - 100),
        }));
        const huge = await api.call('PUT', `/sources/${id}/items`, { items });
        expect(huge.status).toBe(413);
        expect(huge.body.error.code).toBe('payload_too_large');
        const url = `${api.client.baseUrl}/api/v1/sources/${id}/items/k`;
        const headers = { authorization: `Bearer ${api.key}` };
        const malformed = await fetch(url, {
          method: 'PUT',
          headers: { ...headers, 'content-type': 'application/json' },
          body: '{"content":',
        });
        expect(malformed.status).toBe(400);
        expect(((await malformed.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
        const text = await fetch(url, {
          method: 'PUT',
          headers: { ...headers, 'content-type': 'text/plain' },
          body: 'hello',
        });
        expect(text.status).toBe(415);
        expect(((await text.json()) as { error: { code: string } }).error.code).toBe(
          'unsupported_media_type',
        );
        const gzip = await fetch(url, {
          method: 'PUT',
          headers: { ...headers, 'content-type': 'application/json', 'content-encoding': 'gzip' },
          body: '{}',
        });
        expect(gzip.status).toBe(415);
      },
    );

    it.skipIf(!backend.available)(
      "tenant isolation: another tenant's source, run or item is 404 everywhere",
      async () => {
        const id = await api.createSource();
        await api.put(id, 'a', 'Alpha.');
        const run = await api.startRun(id);
        await api.settled(id, run.id);
        const other = await adminToken({ tenantId: 'globex', subject: 'ops' });
        const { secret } = await api.client.createKey(other, { name: 'globex', scopes: ALL_SCOPES });
        const globex = new DataPlaneClient(api.client, secret);
        for (const [method, path, body] of [
          ['GET', `/sources/${id}`, undefined],
          ['PATCH', `/sources/${id}`, { name: 'mine now' }],
          ['POST', `/sources/${id}/deactivate`, undefined],
          ['GET', `/sources/${id}/items`, undefined],
          ['PUT', `/sources/${id}/items/a`, { content: 'x' }],
          ['DELETE', `/sources/${id}/items/a`, undefined],
          ['POST', `/sources/${id}/items/batch`, { delete: ['a'] }],
          ['PUT', `/sources/${id}/items`, { items: [{ key: 'a', content: 'x' }] }],
          ['POST', `/sources/${id}/runs`, {}],
          ['GET', `/sources/${id}/runs`, undefined],
          ['GET', `/sources/${id}/runs/${run.id}`, undefined],
          ['GET', `/sources/${id}/runs/${run.id}/diff`, undefined],
          ['POST', `/sources/${id}/runs/${run.id}/apply`, undefined],
          ['GET', `/sources/${id}/generations`, undefined],
          ['GET', `/sources/${id}/generations/active`, undefined],
        ] as const) {
          const reply = await globex.call(method, path, body);
          expect(reply.status, `${method} ${path}`).toBe(404);
          expect(reply.body.error.code).toBe('not_found');
        }
        expect((await globex.call('GET', '/sources')).body.data).toEqual([]);
        expect((await api.call('GET', `/sources/${id}/runs/${run.id}`)).body.run.status).toBe('completed');
      },
    );

    it.skipIf(!backend.available)('bad ids and list parameters are 400 or 404, never 500', async () => {
      const id = await api.createSource();
      expect((await api.call('GET', '/sources/nope')).status).toBe(404);
      expect((await api.call('GET', `/sources/${id}/runs/run_nope`)).status).toBe(404);
      expect((await api.call('POST', `/sources/${id}/runs/run_nope/apply`)).status).toBe(404);
      expect((await api.call('GET', '/sources?limit=0')).status).toBe(400);
      expect((await api.call('GET', '/sources?cursor=%%%')).status).toBe(400);
      expect((await api.call('GET', `/sources/${id}/items?cursor=bm90IGEga2V5IQ`)).status).toBe(400);
      const run = await api.startRun(id);
      await api.settled(id, run.id);
      expect((await api.call('GET', `/sources/${id}/runs/${run.id}/diff?change=moved`)).status).toBe(400);
      expect((await api.call('POST', `/sources/${id}/runs`, { expectedBaseGeneration: -1 })).status).toBe(
        400,
      );
    });
  },
);
