import type { PortalExchangeOutcome, PortalSessionRecord } from '../store/types.js';

export type PortalLinkRefusal = Extract<PortalExchangeOutcome, { outcome: 'refused' }>['reason'];

/**
 * Why a portal link cannot be exchanged at `now`, or null when it can: the one order every store
 * reports (docs/decisions.md §22.2). A revoked link says so before it says it was used or expired;
 * a missing one is `unknown`. Stores ask it of the row they read after an exchange wrote nothing.
 */
export function portalLinkRefusal(
  session: Pick<PortalSessionRecord, 'revokedAt' | 'exchangedAt' | 'expiresAt'> | null,
  now: Date,
): PortalLinkRefusal | null {
  if (session === null) return 'unknown';
  if (session.revokedAt !== null) return 'revoked';
  if (session.exchangedAt !== null) return 'used';
  if (session.expiresAt.getTime() <= now.getTime()) return 'expired';
  return null;
}
