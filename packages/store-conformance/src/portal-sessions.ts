import { randomBytes } from 'node:crypto';
import type { PortalExchangeOutcome, PortalSessionRecord } from '@keyhook/core/store';
import { describe, expect, it } from 'vitest';
import { portalSessionRecord, sha256, T0 } from './fixtures.js';
import type { SuiteContext } from './store-harness.js';

const at = (ms: number) => new Date(T0.getTime() + ms);
const HOUR = 3_600_000;
/** Before any session's purge: no case's purgeBefore removes what it inserted. */
const KEEP_ALL = new Date(0);
const sessionHash = () => sha256(`kps_${randomBytes(24).toString('hex')}`);

/**
 * Portal sessions (Store.insertPortalSession, exchangePortalLink, findPortalSession,
 * revokePortalSessions): a one-time link that opens one browser session, exchanged at most once.
 */
export function portalSessionCases(ctx: SuiteContext): void {
  async function inserted(overrides: Partial<PortalSessionRecord> = {}): Promise<PortalSessionRecord> {
    const record = portalSessionRecord(overrides);
    await ctx.store.insertPortalSession(record, KEEP_ALL);
    return record;
  }

  /** Inserts a session and exchanges its link at T0 + 1 s; the session as the exchange returned it. */
  async function opened(overrides: Partial<PortalSessionRecord> = {}): Promise<PortalSessionRecord> {
    const record = await inserted(overrides);
    const outcome = await ctx.store.exchangePortalLink(record.linkHash, sessionHash(), at(1000));
    if (outcome.outcome !== 'exchanged') throw new Error(`expected an exchange, got ${outcome.reason}`);
    return outcome.session;
  }

  const refused = (reason: 'unknown' | 'used' | 'expired' | 'revoked'): PortalExchangeOutcome => ({
    outcome: 'refused',
    reason,
  });

  describe('portal sessions', () => {
    it('round-trips every field: the exchange returns the session as stored, and find returns it by its session hash', async () => {
      const anyScope = portalSessionRecord({
        permissions: ['keys:read', 'webhooks:read'],
        scopes: null,
        createdAt: new Date('2026-03-01T11:59:58.123Z'),
        expiresAt: new Date('2026-03-01T12:30:00.456Z'),
      });
      const someScopes = portalSessionRecord({
        tenantId: 'tenant_b',
        permissions: ['keys:read', 'keys:write'],
        scopes: ['items:read', 'items:write'],
      });
      const sessions: PortalSessionRecord[] = [];
      for (const record of [anyScope, someScopes]) {
        await ctx.store.insertPortalSession(record, KEEP_ALL);
        const hash = sessionHash();
        const outcome = await ctx.store.exchangePortalLink(record.linkHash, hash, at(1007));
        const session = { ...record, sessionHash: hash, exchangedAt: at(1007) };
        expect(outcome).toEqual({ outcome: 'exchanged', session });
        const found = await ctx.store.findPortalSession(hash);
        expect(found).toEqual(session);
        expect(found!.createdAt).toBeInstanceOf(Date);
        expect(found!.exchangedAt).toBeInstanceOf(Date);
        sessions.push(session);
      }
      // A revoked session carries when.
      const revoked = sessions[1]!;
      expect(await ctx.store.revokePortalSessions('tenant_b', revoked.id, at(2003))).toBe(1);
      expect(await ctx.store.findPortalSession(revoked.sessionHash!)).toEqual({
        ...revoked,
        revokedAt: at(2003),
      });
    });

    it('exchanges a link once: the first exchange writes the session hash and the time, a second is refused as used and writes nothing', async () => {
      const record = await inserted();
      const first = sessionHash();
      const second = sessionHash();
      const outcome = await ctx.store.exchangePortalLink(record.linkHash, first, at(1000));
      expect(outcome).toMatchObject({
        outcome: 'exchanged',
        session: { sessionHash: first, exchangedAt: at(1000) },
      });
      expect(await ctx.store.exchangePortalLink(record.linkHash, second, at(2000))).toEqual(refused('used'));
      expect(await ctx.store.findPortalSession(second)).toBeNull();
      expect(await ctx.store.findPortalSession(first)).toEqual({
        ...record,
        sessionHash: first,
        exchangedAt: at(1000),
      });
    });

    it('refuses an expired link (expiresAt <= now) as expired, and writes nothing', async () => {
      const record = await inserted({ expiresAt: at(HOUR) });
      const late = sessionHash();
      expect(await ctx.store.exchangePortalLink(record.linkHash, late, at(HOUR))).toEqual(refused('expired'));
      expect(await ctx.store.findPortalSession(late)).toBeNull();
      // Nothing was written: one millisecond before the end, the link still opens a session.
      const inTime = sessionHash();
      const outcome = await ctx.store.exchangePortalLink(record.linkHash, inTime, at(HOUR - 1));
      expect(outcome).toMatchObject({ outcome: 'exchanged', session: { sessionHash: inTime } });
    });

    it('refuses a revoked link as revoked, and an unknown one as unknown', async () => {
      const record = await inserted();
      expect(await ctx.store.revokePortalSessions('tenant_a', record.id, at(500))).toBe(1);
      const hash = sessionHash();
      expect(await ctx.store.exchangePortalLink(record.linkHash, hash, at(1000))).toEqual(refused('revoked'));
      expect(await ctx.store.findPortalSession(hash)).toBeNull();
      expect(await ctx.store.exchangePortalLink(sha256('no such link'), sessionHash(), at(1000))).toEqual(
        refused('unknown'),
      );
    });

    it('says why in the order unknown, revoked, used, expired when several hold', async () => {
      // Revoked and expired: revoked.
      const revokedExpired = await inserted({ expiresAt: at(HOUR) });
      await ctx.store.revokePortalSessions('tenant_a', revokedExpired.id, at(10));
      expect(
        await ctx.store.exchangePortalLink(revokedExpired.linkHash, sessionHash(), at(2 * HOUR)),
      ).toEqual(refused('revoked'));
      // Used and revoked: revoked. Used and expired: used.
      const usedRevoked = await opened();
      await ctx.store.revokePortalSessions('tenant_a', usedRevoked.id, at(2000));
      expect(await ctx.store.exchangePortalLink(usedRevoked.linkHash, sessionHash(), at(3000))).toEqual(
        refused('revoked'),
      );
      const usedExpired = await opened({ expiresAt: at(HOUR) });
      expect(await ctx.store.exchangePortalLink(usedExpired.linkHash, sessionHash(), at(2 * HOUR))).toEqual(
        refused('used'),
      );
    });

    it('of 10 concurrent exchanges of one link over two connections, exactly one opens the session; the others are refused as used', async () => {
      const record = await inserted();
      const peer = await ctx.peer();
      const hashes = Array.from({ length: 10 }, sessionHash);
      const outcomes = await Promise.all(
        hashes.map((hash, i) =>
          (i % 2 ? peer : ctx.store).exchangePortalLink(record.linkHash, hash, at(1000)),
        ),
      );
      const winners = outcomes.flatMap((o, i) => (o.outcome === 'exchanged' ? [hashes[i]!] : []));
      expect(winners).toHaveLength(1);
      expect(outcomes.filter((o) => o.outcome === 'refused')).toEqual(Array(9).fill(refused('used')));
      const found = await Promise.all(hashes.map((hash) => ctx.store.findPortalSession(hash)));
      expect(found.filter((session) => session !== null)).toEqual([
        { ...record, sessionHash: winners[0], exchangedAt: at(1000) },
      ]);
    });

    it('finds a session only by its own session hash: not by another hash, nor by its link hash', async () => {
      const session = await opened();
      expect(await ctx.store.findPortalSession(sessionHash())).toBeNull();
      expect(await ctx.store.findPortalSession(session.linkHash)).toBeNull();
      expect(await ctx.store.findPortalSession(session.sessionHash!)).toEqual(session);
    });

    it("revokes one session of the tenant, once: another tenant's id revokes nothing, and a second revoke counts 0 and keeps the first time", async () => {
      const mine = await opened();
      const sibling = await opened();
      const theirs = await opened({ tenantId: 'tenant_b' });
      expect(await ctx.store.revokePortalSessions('tenant_b', mine.id, at(5000))).toBe(0);
      expect(await ctx.store.revokePortalSessions('tenant_a', theirs.id, at(5000))).toBe(0);
      expect(await ctx.store.revokePortalSessions('tenant_a', 'ps_missing', at(5000))).toBe(0);
      expect(await ctx.store.findPortalSession(mine.sessionHash!)).toEqual(mine);

      expect(await ctx.store.revokePortalSessions('tenant_a', mine.id, at(6000))).toBe(1);
      expect(await ctx.store.revokePortalSessions('tenant_a', mine.id, at(7000))).toBe(0);
      expect(await ctx.store.findPortalSession(mine.sessionHash!)).toEqual({ ...mine, revokedAt: at(6000) });
      expect(await ctx.store.findPortalSession(sibling.sessionHash!)).toEqual(sibling);
      expect(await ctx.store.findPortalSession(theirs.sessionHash!)).toEqual(theirs);
    });

    it("revokes every standing session of the tenant, exchanged or not, and counts only those it revoked; other tenants' stand", async () => {
      const before = await opened();
      await ctx.store.revokePortalSessions('tenant_a', before.id, at(2000));
      const open = await opened();
      const link = await inserted();
      const theirs = await opened({ tenantId: 'tenant_b' });
      expect(await ctx.store.revokePortalSessions('tenant_a', undefined, at(3000))).toBe(2);
      expect(await ctx.store.findPortalSession(before.sessionHash!)).toEqual({
        ...before,
        revokedAt: at(2000),
      });
      expect(await ctx.store.findPortalSession(open.sessionHash!)).toEqual({ ...open, revokedAt: at(3000) });
      expect(await ctx.store.exchangePortalLink(link.linkHash, sessionHash(), at(4000))).toEqual(
        refused('revoked'),
      );
      expect(await ctx.store.findPortalSession(theirs.sessionHash!)).toEqual(theirs);
      expect(await ctx.store.revokePortalSessions('tenant_a', undefined, at(5000))).toBe(0);
    });

    it("of 10 concurrent revocations of a tenant's sessions over two connections, each session is counted once", async () => {
      const sessions = await Promise.all(Array.from({ length: 6 }, () => opened()));
      const peer = await ctx.peer();
      const counts = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? peer : ctx.store).revokePortalSessions('tenant_a', undefined, at(5000 + i)),
        ),
      );
      expect(counts.reduce((sum, count) => sum + count, 0)).toBe(sessions.length);
      for (const session of sessions) {
        const found = await ctx.store.findPortalSession(session.sessionHash!);
        expect(found!.revokedAt).not.toBeNull();
      }
    });

    it('insert purges every session, of any tenant, that expired before purgeBefore, and keeps the rest', async () => {
      const gone = await opened({ expiresAt: at(10 * 1000) });
      const goneLink = await inserted({ tenantId: 'tenant_b', expiresAt: at(19_999) });
      const edge = await opened({ expiresAt: at(20_000) });
      const edgeLink = await inserted({ tenantId: 'tenant_b', expiresAt: at(20_000) });
      const later = await inserted({ expiresAt: at(HOUR) });
      const fresh = portalSessionRecord({ createdAt: at(30_000), expiresAt: at(2 * HOUR) });
      await ctx.store.insertPortalSession(fresh, at(20_000));

      expect(await ctx.store.findPortalSession(gone.sessionHash!)).toBeNull();
      // A purged link is unknown now, where an expired one that stays is refused as expired.
      expect(await ctx.store.exchangePortalLink(goneLink.linkHash, sessionHash(), at(30_000))).toEqual(
        refused('unknown'),
      );
      expect(await ctx.store.findPortalSession(edge.sessionHash!)).toEqual(edge);
      expect(await ctx.store.exchangePortalLink(edgeLink.linkHash, sessionHash(), at(30_000))).toEqual(
        refused('expired'),
      );
      for (const record of [later, fresh]) {
        const hash = sessionHash();
        expect(await ctx.store.exchangePortalLink(record.linkHash, hash, at(30_000))).toEqual({
          outcome: 'exchanged',
          session: { ...record, sessionHash: hash, exchangedAt: at(30_000) },
        });
      }
    });
  });
}
