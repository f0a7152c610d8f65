import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startDataPlane } from './data-plane.js';

const DAY = 86_400;
const dayOf = () => Math.floor(Date.now() / (DAY * 1000));
const guess = () => `sk_live_${randomBytes(8).toString('hex')}_${randomBytes(24).toString('hex')}`;

/**
 * The server's own rate limits, configured from the environment, over real HTTP: a default for
 * keys without their own (KEYHOOK_RATE_LIMIT), and failed verifications per client address
 * (KEYHOOK_FAILED_AUTH_LIMIT), with the address taken from X-Forwarded-For (KEYHOOK_TRUST_PROXY).
 * Windows of a day: they are aligned to the epoch, so a run is in one window unless it crosses
 * midnight UTC, and then it runs once more.
 */
describe.each(backends)('rate limits of the reference server, on $name', (backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  beforeAll(async () => {
    plane = await startDataPlane(backend, {
      env: { KEYHOOK_RATE_LIMIT: '2/24h', KEYHOOK_FAILED_AUTH_LIMIT: '3/24h', KEYHOOK_TRUST_PROXY: 'true' },
    });
  });
  afterAll(async () => plane?.close());

  const listSources = (token: string, from: string) =>
    plane.running.client.request('GET', '/api/v1/sources', token, undefined, { 'x-forwarded-for': from });

  it("KEYHOOK_RATE_LIMIT limits a key without its own; a key's own limit wins", async () => {
    for (let attempt = 0; ; attempt++) {
      const day = dayOf();
      const { secret } = await plane.running.client.createKey(plane.admin, { name: 'default' });
      const own = await plane.running.client.request('POST', '/api/v1/admin/keys', plane.admin, {
        name: 'own',
        scopes: ['sources:read'],
        rateLimit: { limit: 4, window: DAY },
      });
      const defaulted = [];
      for (let i = 0; i < 3; i++) defaulted.push(await listSources(secret, '192.0.2.1'));
      const owned = [];
      for (let i = 0; i < 5; i++) owned.push(await listSources(own.body.secret, '192.0.2.1'));
      if (dayOf() !== day && attempt === 0) continue;
      expect(defaulted.map((reply) => reply.status)).toEqual([200, 200, 429]);
      expect(defaulted[0]!.headers.get('ratelimit-policy')).toBe(`2;w=${DAY}`);
      expect(defaulted[2]!.body.error.code).toBe('rate_limited');
      expect(Number(defaulted[2]!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(owned.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 429]);
      return;
    }
  });

  it('KEYHOOK_FAILED_AUTH_LIMIT counts failures per client address, as the trusted proxy reports it', async () => {
    for (let attempt = 0; ; attempt++) {
      const day = dayOf();
      // A fresh pair of addresses each attempt: the other attempt's counts stay where they were.
      const [guesser, neighbour] = [`203.0.113.${attempt * 2 + 1}`, `203.0.113.${attempt * 2 + 2}`];
      // The key every test shares, verified from the neighbour's address before the guessing.
      expect((await listSources(plane.key, neighbour)).status).toBe(200);
      const failures = [];
      for (let i = 0; i < 4; i++) failures.push((await listSources(guess(), guesser)).status);
      const neighbourReply = await listSources(guess(), neighbour);
      // A key verified before passes from the guesser's address too; a fresh one waits there only.
      const verified = await listSources(plane.key, guesser);
      const { secret: fresh } = await plane.running.client.createKey(plane.admin, { name: 'fresh' });
      const freshFromGuesser = await listSources(fresh, guesser);
      const freshElsewhere = await listSources(fresh, neighbour);
      if (dayOf() !== day && attempt === 0) continue;
      expect(failures).toEqual([401, 401, 401, 429]);
      expect(neighbourReply.status).toBe(401);
      expect(verified.status).toBe(200);
      expect(freshFromGuesser.status).toBe(429);
      expect(freshFromGuesser.body.error.code).toBe('rate_limited');
      expect(freshElsewhere.status).toBe(200);
      return;
    }
  });
});
