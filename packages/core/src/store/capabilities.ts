import type { EventFeedStore, PortalSessionStore, Store } from './types.js';

/**
 * The capabilities a store may leave out (docs/decisions.md §20.5), each with every member it
 * then lacks whole: what `createKeyhook` checks, and what the conformance suite's `without` names.
 */
export const OPTIONAL_CAPABILITIES = {
  eventFeed: {
    interface: 'EventFeedStore',
    members: ['listFeedEvents'],
    usedBy: 'the events feed (GET /events)',
    without: 'pass eventsFeed: false to serve no feed',
  },
  portalSessions: {
    interface: 'PortalSessionStore',
    members: ['insertPortalSession', 'exchangePortalLink', 'findPortalSession', 'revokePortalSessions'],
    usedBy: 'the customer portal',
    without: 'leave out the portal option, and mint no portal links',
  },
} as const;

export type OptionalCapability = keyof typeof OPTIONAL_CAPABILITIES;

interface CapabilityOf {
  eventFeed: EventFeedStore;
  portalSessions: PortalSessionStore;
}

/**
 * The store as `capability`, or null when it has none of its members. A store with some of them
 * and not all is a store written halfway: refused, naming what is missing.
 */
export function capabilityOf<Name extends OptionalCapability>(
  store: Store,
  capability: Name,
): CapabilityOf[Name] | null {
  const { interface: name, members } = OPTIONAL_CAPABILITIES[capability];
  const has = members.filter(
    (member) => typeof (store as unknown as Record<string, unknown>)[member] === 'function',
  );
  if (has.length === 0) return null;
  if (has.length < members.length) {
    const missing = members.filter((member) => !has.includes(member));
    throw new TypeError(
      `keyhook: the store has part of ${name} (${has.join(', ')}) but not ${missing.join(', ')}: a store keeps a capability whole, or leaves it out`,
    );
  }
  return store as unknown as CapabilityOf[Name];
}

/** The refusal of a store that lacks a capability the options use. */
export function missingCapability(capability: OptionalCapability): TypeError {
  const { interface: name, members, usedBy, without } = OPTIONAL_CAPABILITIES[capability];
  return new TypeError(
    `keyhook: ${usedBy} needs a store with ${name} (${members.join(', ')}), and this store has none: use a store that keeps it (each store keyhook ships does), or ${without}`,
  );
}
