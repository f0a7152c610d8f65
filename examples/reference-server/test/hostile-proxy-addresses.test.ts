import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, startDataPlane } from './data-plane.js';

const DAY = 86_400;
const dayOf = () => Math.floor(Date.now() / (DAY * 1000));
const guess = () => `sk_live_${randomBytes(8).toString('hex')}_${randomBytes(24).toString('hex')}`;

/**
 * A client address blocked for failed verifications stays blocked however the trusted proxy
 * spells it in X-Forwarded-For (docs/decisions.md §12.6). Windows of a day, as in
 * rate-limits.test.ts: a run that crosses midnight UTC runs once more.
 */
describe.each(backends)('client addresses a proxy spells, on $name', (backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  beforeAll(async () => {
    plane = await startDataPlane(backend, {
      env: { KEYHOOK_FAILED_AUTH_LIMIT: '3/24h', KEYHOOK_TRUST_PROXY: 'true' },
    });
  });
  afterAll(async () => plane?.close());

  const statusFrom = async (token: string, from: string) => {
    const reply = await plane.running.client.request('GET', '/api/v1/sources', token, undefined, {
      'x-forwarded-for': from,
    });
    if (reply.status === 429) expect(reply.body.error.code).toBe('rate_limited');
    return reply.status;
  };

  // The key every case shares, verified once from an address of its own before any guessing.
  beforeAll(async () => {
    expect(await statusFrom(plane.key, '192.0.2.1')).toBe(200);
  });

  it('every spelling of a blocked address gets the 429: with a port, IPv4-mapped, bracketed', async () => {
    for (let attempt = 0; ; attempt++) {
      const day = dayOf();
      // Fresh addresses each attempt: the other attempt's counts stay where they were.
      const v4 = `198.51.100.${attempt + 1}`;
      const v4Hex = `c633:64${(attempt + 1).toString(16).padStart(2, '0')}`;
      const v6 = `2001:db8:${attempt + 1}::1`;
      const failures = [];
      for (let i = 0; i < 3; i++) failures.push(await statusFrom(guess(), v4));
      for (let i = 0; i < 3; i++) failures.push(await statusFrom(guess(), v6));
      const spellings = [
        v4,
        `${v4}:1234`,
        `::ffff:${v4}`,
        `::FFFF:${v4}`,
        `0:0:0:0:0:ffff:${v4}`,
        `::ffff:${v4Hex}`,
        `[::ffff:${v4}]`,
        `[::ffff:${v4}]:1234`,
        v6,
        `[${v6}]`,
        `[${v6}]:443`,
        `2001:0DB8:000${attempt + 1}:0000::2`,
      ];
      const refused = [];
      for (const spelled of spellings) refused.push([spelled, await statusFrom(guess(), spelled)]);
      // The neighbouring address is counted apart; the key verified before passes from the blocked one.
      const neighbour = await statusFrom(guess(), `198.51.100.${attempt + 101}`);
      const verified = await statusFrom(plane.key, `${v4}:1234`);
      if (dayOf() !== day && attempt === 0) continue;
      expect(failures).toEqual([401, 401, 401, 401, 401, 401]);
      expect(refused).toEqual(spellings.map((spelled) => [spelled, 429]));
      expect(neighbour).toBe(401);
      expect(verified).toBe(200);
      return;
    }
  });

  it('spellings that are no address (octal, integer, hex, garbage) share one budget, and a valid key still passes', async () => {
    for (let attempt = 0; ; attempt++) {
      const day = dayOf();
      const unreadable = [
        '0306.063.0144.01',
        '3325256705',
        '0xc6336401',
        '0xc6.0x33.0x64.0x01',
        '0306.063.0144.01:1234',
        '[198.51.100.1]',
        'unknown',
      ];
      // Three failures from three different spellings spend the one budget they share.
      const failures = [];
      for (const spelled of unreadable.slice(0, 3)) failures.push(await statusFrom(guess(), spelled));
      const refused = [];
      for (const spelled of unreadable) refused.push([spelled, await statusFrom(guess(), spelled)]);
      const verified = await statusFrom(plane.key, unreadable[0]!);
      const { secret: fresh } = await plane.running.client.createKey(plane.admin, { name: 'fresh' });
      const freshFromUnreadable = await statusFrom(fresh, 'unknown');
      if (dayOf() !== day && attempt === 0) continue;
      expect(failures).toEqual([401, 401, 401]);
      expect(refused).toEqual(unreadable.map((spelled) => [spelled, 429]));
      // Not refused as a request: a key verified before passes, a fresh one waits with the guessers.
      expect(verified).toBe(200);
      expect(freshFromUnreadable).toBe(429);
      return;
    }
  });
});
