import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reply } from './client.js';
import { backends, startDataPlane } from './data-plane.js';

/** U+0000, which Postgres text cannot hold, and an unpaired surrogate, which UTF-8 cannot encode. */
const UNSTORABLE = { nul: 'a\u0000b', 'lone surrogate': 'a\ud800b' };

describe.each(backends)('text a store cannot keep as it came, on $name', (backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  let sourceId: string;
  beforeAll(async () => {
    plane = await startDataPlane(backend);
    sourceId = await plane.api.createSource();
  });
  afterAll(async () => plane?.close());

  /** The keys of the source's staged items. */
  const keys = async () =>
    (await plane.api.call('GET', `/sources/${sourceId}/items?limit=100`)).body.data.map(
      (item: { key: string }) => item.key,
    );

  describe.each(Object.entries(UNSTORABLE))('%s', (_, bad) => {
    it('is refused with 400 validation_failed naming the field, in every field that is stored as text', async () => {
      const { api, admin, running } = plane;
      const cases: [string, Promise<Reply>, string][] = [
        ['source name', api.call('POST', '/sources', { name: bad }), 'name'],
        ['source description', api.call('POST', '/sources', { name: 'x', description: bad }), 'description'],
        ['source patch', api.call('PATCH', `/sources/${sourceId}`, { name: bad }), 'name'],
        ['item content', api.call('PUT', `/sources/${sourceId}/items/k1`, { content: bad }), 'content'],
        [
          'item title',
          api.call('PUT', `/sources/${sourceId}/items/k2`, { content: 'c', title: bad }),
          'title',
        ],
        [
          'item url',
          api.call('PUT', `/sources/${sourceId}/items/k3`, { content: 'c', url: `https://a.example/${bad}` }),
          'url',
        ],
        [
          'snapshot item',
          api.call('PUT', `/sources/${sourceId}/items`, {
            items: [
              { key: 'a', content: 'fine' },
              { key: 'b', content: bad },
            ],
          }),
          'items.1.content',
        ],
        [
          'key name',
          running.client.request('POST', '/api/v1/admin/keys', admin, {
            name: bad,
            scopes: ['sources:read'],
          }),
          'name',
        ],
      ];
      for (const [label, reply, path] of cases) {
        const { status, body } = await reply;
        expect([label, status, body.error?.code], JSON.stringify(body)).toEqual([
          label,
          400,
          'validation_failed',
        ]);
        expect(body.error.details, label).toContainEqual({
          path,
          message: 'must not contain U+0000 or an unpaired surrogate',
        });
      }
      // Nothing was written: neither the refused items nor the snapshot with its good item.
      expect(await keys()).not.toContain('k1');
      expect(await keys()).not.toContain('a');
    });

    it('in a batch, fails its operation alone', async () => {
      const reply = await plane.api.call('POST', `/sources/${sourceId}/items/batch`, {
        upsert: [
          { key: 'fine', content: 'ok' },
          { key: 'bad', content: bad },
        ],
      });
      expect(reply.status).toBe(200);
      expect(reply.body.results[0]).toMatchObject({ key: 'fine' });
      expect(reply.body.results[0].error).toBeUndefined();
      expect(reply.body.results[1]).toMatchObject({
        key: 'bad',
        error: { code: 'validation_failed', details: [{ path: 'content' }] },
      });
      expect(await keys()).toContain('fine');
      expect(await keys()).not.toContain('bad');
    });

    it('is kept as it came inside metadata, which every store holds as JSON text', async () => {
      const metadata = { [bad]: bad, nested: [bad] };
      const put = await plane.api.call('PUT', `/sources/${sourceId}/items/meta`, { content: 'c', metadata });
      expect([200, 201]).toContain(put.status);
      const list = await plane.api.call('GET', `/sources/${sourceId}/items`);
      const item = list.body.data.find((i: { key: string }) => i.key === 'meta');
      expect(item.metadata).toEqual(metadata);
    });
  });
});
