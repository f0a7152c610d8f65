import { createKeyhook, MemoryStore } from '@keyhook/core';
import type { Store } from '@keyhook/core/store';
import { OPTIONAL_CAPABILITIES } from '@keyhook/core/store';
import { runStoreConformance } from '@keyhook/store-conformance';
import { TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';

/** The memory store each stripped store calls. */
const wholeOf = new WeakMap<object, MemoryStore>();

/**
 * A store that keeps only what every keyhook needs (docs/decisions.md §20.5): a memory store with
 * the events feed's and the portal's members taken away, as a third party's store may be.
 */
function storeWithout(...members: readonly string[]): Store {
  const whole = new MemoryStore();
  const store: Record<string, unknown> = { persistent: whole.persistent };
  wholeOf.set(store, whole);
  let prototype = Object.getPrototypeOf(whole);
  for (; prototype !== Object.prototype; prototype = Object.getPrototypeOf(prototype)) {
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const member = (whole as unknown as Record<string, unknown>)[name];
      if (name === 'constructor' || members.includes(name) || typeof member !== 'function') continue;
      store[name] ??= member.bind(whole);
    }
  }
  return store as unknown as Store;
}

const FEED = OPTIONAL_CAPABILITIES.eventFeed.members;
const PORTAL = OPTIONAL_CAPABILITIES.portalSessions.members;
const options = { ...TEST_CATALOG, adminSession: { secret: TEST_ADMIN_SECRET } };

describe('a store without the optional capabilities', () => {
  it('is refused when the events feed is on, naming EventFeedStore and the way out', () => {
    expect(() => createKeyhook({ ...options, store: storeWithout(...FEED, ...PORTAL) })).toThrow(
      /the events feed \(GET \/events\) needs a store with EventFeedStore \(listFeedEvents\).*eventsFeed: false/,
    );
  });

  it('is refused when the portal option is set, naming PortalSessionStore and its members', () => {
    expect(() =>
      createKeyhook({
        ...options,
        store: storeWithout(...FEED, ...PORTAL),
        eventsFeed: false,
        portal: { url: '/portal' },
      }),
    ).toThrow(
      /the customer portal needs a store with PortalSessionStore \(insertPortalSession, exchangePortalLink, findPortalSession, revokePortalSessions\)/,
    );
  });

  it('runs keys and webhooks without them; the portal serves nothing and minting a link says why', async () => {
    const keyhook = createKeyhook({ ...options, store: storeWithout(...FEED, ...PORTAL), eventsFeed: false });
    const { key, secret } = await keyhook.keys.create('tenant_a', { name: 'ci', scopes: ['items:read'] });
    expect((await keyhook.keys.verify(secret)).id).toBe(key.id);
    expect(keyhook.routes.map((route) => route.path)).not.toContain('/events');
    expect(keyhook.portal.api.routes).toEqual([]);
    await expect(
      keyhook.portal.createSession({ tenantId: 'tenant_a', permissions: ['keys:read'] }),
    ).rejects.toThrow(/the customer portal needs a store with PortalSessionStore/);
    await expect(keyhook.portal.revokeSessions('tenant_a')).rejects.toThrow(/PortalSessionStore/);
    const answer = await keyhook.portal.api.handle({
      method: 'GET',
      path: '/api/session',
      headers: {},
      rawBody: null,
    });
    expect(answer.status).toBe(404);
    await keyhook.close();
  });

  it('serves the feed and the portal when it has them', async () => {
    const keyhook = createKeyhook({ ...options, store: storeWithout(), portal: { url: '/portal' } });
    expect(keyhook.routes.map((route) => route.path)).toContain('/events');
    expect(keyhook.portal.api.routes.length).toBeGreaterThan(0);
    await keyhook.portal.createSession({ tenantId: 'tenant_a', permissions: ['keys:read'] });
    await keyhook.close();
  });

  it('is refused when it keeps a capability in part, naming what it lacks', () => {
    expect(() =>
      createKeyhook({ ...options, store: storeWithout('findPortalSession', 'revokePortalSessions') }),
    ).toThrow(
      /part of PortalSessionStore \(insertPortalSession, exchangePortalLink\) but not findPortalSession, revokePortalSessions/,
    );
  });
});

// The conformance suite over a store without the two optional capabilities: their cases are
// skipped, every other case runs, and the suite checks that the store lacks them whole.
runStoreConformance({
  name: 'memory, without EventFeedStore and PortalSessionStore',
  create: async () => storeWithout(...FEED, ...PORTAL),
  without: ['eventFeed', 'portalSessions'],
  createPeer: async (store) => store,
  readKeyRow: async (store, id) => {
    const whole = wholeOf.get(store) as unknown as { keys: Map<string, Record<string, unknown>> };
    const held = whole.keys.get(id);
    return held ? { ...held } : null;
  },
});
