import { performance } from 'node:perf_hooks';
import { postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { adminToken, waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, postgresEnv, type Running, start } from './instances.js';

const withPostgres = await postgresAvailable();
const CYCLES = 50;

/**
 * docs/decisions.md §3.9: after DELETE (or rotate) returns on one instance, the next request with
 * that key fails on every instance. Two servers, each with its own pool, share one schema.
 */
describe.skipIf(!withPostgres)(
  'two instances on one Postgres (docs/decisions.md §3.9 revocation bound)',
  () => {
    const schema = uniqueSchemaName('ref_two');
    let a: Running;
    let b: Running;
    let admin: string;

    beforeAll(async () => {
      a = await start(postgresEnv(schema));
      b = await start(postgresEnv(schema));
      admin = await adminToken({ tenantId: 'acme' });
    });

    afterAll(async () => {
      await Promise.all([a?.server.close(), b?.server.close()]);
      await dropSchema(schema);
    });

    it('the instances are separate: separate ports, separate stores', () => {
      expect(a.client.baseUrl).not.toBe(b.client.baseUrl);
      expect(a.server.store).not.toBe(b.server.store);
    });

    it(`revoke on A → the very next request on B is 401 key_revoked (${CYCLES} cycles, none slips)`, async () => {
      // Postgres caches nothing by default (a NOTIFY can reach B after A answered): B reads the row.
      expect(b.server.store.keyChangeVersion()).toBeNull();
      const gaps: number[] = [];
      let slipped = 0;
      for (let cycle = 0; cycle < CYCLES; cycle++) {
        const { id, secret } = await a.client.createKey(admin, { name: `cycle ${cycle}` });
        expect((await b.client.listSources(secret)).status).toBe(200); // B knows the key before the revoke

        const revoked = await a.client.revoke(admin, id);
        expect(revoked.status).toBe(200);
        const revokedAt = performance.now();
        const next = await b.client.listSources(secret);
        gaps.push(performance.now() - revokedAt);
        if (next.status !== 401 || next.body?.error?.code !== 'key_revoked') slipped++;
      }
      gaps.sort((x, y) => x - y);
      const at = (q: number) => gaps[Math.min(gaps.length - 1, Math.floor(q * gaps.length))]!.toFixed(2);
      console.log(
        `[two instances] revoke on A → refusal on B over ${CYCLES} cycles: ${slipped} slipped; ` +
          `gap (A's DELETE response → B's 401) median ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${at(1)} ms`,
      );
      expect(slipped).toBe(0);
    });

    it('requests racing the revoke on B: none that starts after A’s DELETE returned gets a 200', async () => {
      const { id, secret } = await a.client.createKey(admin, { name: 'raced' });
      let revokedAt = Number.POSITIVE_INFINITY;
      let served = 0;
      const late: { startedAt: number; status: number }[] = [];
      let stop = false;
      // Two request loops on B keep a request in flight the whole time.
      const hammer = async () => {
        while (!stop) {
          const startedAt = performance.now();
          const reply = await b.client.listSources(secret);
          if (reply.status === 200) served++;
          if (startedAt > revokedAt) late.push({ startedAt, status: reply.status });
        }
      };
      const loops = [hammer(), hammer()];
      await waitUntil(() => served >= 4); // B serves the key before the revoke
      expect((await a.client.revoke(admin, id)).status).toBe(200);
      revokedAt = performance.now();
      await waitUntil(() => late.length >= 20);
      stop = true;
      await Promise.all(loops);
      expect(late.length).toBeGreaterThanOrEqual(20);
      expect(late.filter((r) => r.status !== 401)).toEqual([]);
    });

    it('rotate on A → B refuses the old secret with invalid_api_key and takes the new one at once', async () => {
      for (let cycle = 0; cycle < 10; cycle++) {
        const { id, secret: old } = await a.client.createKey(admin, { name: `rotate ${cycle}` });
        expect((await b.client.listSources(old)).status).toBe(200);

        const rotated = await a.client.rotate(admin, id);
        expect(rotated.status).toBe(200);
        const fresh: string = rotated.body.secret;
        expect(fresh).not.toBe(old);

        const refused = await b.client.listSources(old);
        expect(refused.status).toBe(401);
        expect(refused.body.error.code).toBe('invalid_api_key');
        const accepted = await b.client.listSources(fresh);
        expect(accepted.status).toBe(200);
        expect((await b.client.request('GET', '/api/v1/whoami', fresh)).body.key.id).toBe(id);
      }
    });

    it('a key created on B is managed from A: same tenant, one database', async () => {
      const { id } = await b.client.createKey(admin, { name: 'made on B' });
      const fromA = await a.client.request('GET', `/api/v1/admin/keys/${id}`, admin);
      expect(fromA).toMatchObject({ status: 200, body: { key: { id, name: 'made on B' } } });
    });

    // Counted per instance: each admits exactly the limit. This server caches no key on Postgres, so
    // B reads the raised limit with the row; store-postgres's rate-limit-instances test shows the
    // same through the key cache and its change feed.
    it("a key's rate limit across two instances: exactly the limit on each, a change seen by both", async () => {
      const DAY = 86_400;
      const dayOf = () => Math.floor(Date.now() / (DAY * 1000));
      // Windows are aligned to the epoch: a run that crossed midnight UTC would count two windows.
      for (let attempt = 0; ; attempt++) {
        const day = dayOf();
        const created = await a.client.request('POST', '/api/v1/admin/keys', admin, {
          name: 'limited',
          scopes: ['sources:read'],
          rateLimit: { limit: 5, window: DAY },
        });
        expect(created.status).toBe(201);
        const { id } = created.body.key;
        const secret: string = created.body.secret;
        const statuses = async (client: typeof a.client, count: number) => {
          const seen: number[] = [];
          for (let i = 0; i < count; i++) seen.push((await client.listSources(secret)).status);
          return seen;
        };
        // Interleaved, so neither instance runs ahead of the other.
        const onA: number[] = [];
        const onB: number[] = [];
        for (let i = 0; i < 8; i++) {
          onA.push(...(await statuses(a.client, 1)));
          onB.push(...(await statuses(b.client, 1)));
        }
        // Raised on B to 7 in the same window: each instance has counted 5, so each admits 2 more.
        const raised = await b.client.request('PATCH', `/api/v1/admin/keys/${id}`, admin, {
          rateLimit: { limit: 7, window: DAY },
        });
        expect(raised.status).toBe(200);
        const afterA = await statuses(a.client, 4);
        const afterB = await statuses(b.client, 4);
        if (dayOf() !== day && attempt === 0) continue;
        const admitted = (seen: number[]) => seen.filter((status) => status === 200).length;
        expect(onA.filter((status) => status !== 200 && status !== 429)).toEqual([]);
        expect([admitted(onA), admitted(onB)]).toEqual([5, 5]);
        expect([afterA, afterB]).toEqual([
          [200, 200, 429, 429],
          [200, 200, 429, 429],
        ]);
        return;
      }
    });
  },
);
