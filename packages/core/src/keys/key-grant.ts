import { KeyhookError } from '../errors.js';
import type { RateLimit } from './rate-limit.js';

/**
 * What a caller may grant on a key: a portal session's caps (docs/decisions.md §22.5). An admin
 * JWT carries none, and may grant anything the host's catalog allows.
 */
export interface KeyGrant {
  /** The scopes a key it creates or rotates may carry; absent: any of the host's. */
  scopes?: readonly string[] | undefined;
  /**
   * The most a key's own rate limit it sets may allow: the host's default for the tenant, its
   * plan. Null: the host has none, so a limit only ever restricts. Absent: no cap.
   */
  rateCeiling?: RateLimit | null | undefined;
}

/** Refuses scopes outside the grant with `forbidden`, naming each. */
export function assertGrantsScopes(
  grant: KeyGrant | undefined,
  scopes: readonly string[],
  verb: string,
): void {
  const allowed = grant?.scopes;
  if (allowed === undefined) return;
  const refused = scopes.filter((scope) => !allowed.includes(scope));
  if (refused.length === 0) return;
  throw new KeyhookError('forbidden', `This session may not ${verb} keys with the scope ${refused[0]}.`, {
    details: refused.map((scope) => ({ path: 'scopes', message: `may not grant ${scope}`, scope })),
  });
}

/** Requests per second: how limits of different windows compare. */
const rateOf = (limit: RateLimit) => limit.limit / limit.window;

/**
 * Refuses, with `forbidden`, a key rate limit a session may not set (docs/decisions.md §22.5):
 * - on a key whose limit the host set, anything but a limit no looser than it;
 * - otherwise, a limit that allows more than the grant's ceiling (the host's default, its plan).
 *
 * `key` is the key as it stands; undefined on create.
 */
export function assertRateLimitAllowed(
  grant: KeyGrant | undefined,
  rateLimit: RateLimit | null | undefined,
  key?: { rateLimit: RateLimit | null; rateLimitByHost: boolean },
): void {
  if (grant === undefined || rateLimit === undefined) return;
  const hostLimit = key?.rateLimitByHost ? key.rateLimit : null;
  if (hostLimit !== null) {
    if (rateLimit !== null && rateOf(rateLimit) <= rateOf(hostLimit)) return;
    throw new KeyhookError(
      'forbidden',
      `The host set this key's rate limit (${hostLimit.limit} requests per ${hostLimit.window} s): this session may lower it, not raise or remove it.`,
      { details: [{ path: 'rateLimit', message: 'above the rate limit the host set', ceiling: hostLimit }] },
    );
  }
  const ceiling = grant.rateCeiling;
  if (ceiling === undefined || ceiling === null || rateLimit === null) return;
  if (rateOf(rateLimit) <= rateOf(ceiling)) return;
  throw new KeyhookError(
    'forbidden',
    `This session may not allow more than ${ceiling.limit} requests per ${ceiling.window} s.`,
    { details: [{ path: 'rateLimit', message: 'above the plan’s rate limit', ceiling }] },
  );
}

/**
 * Whether a key's limit, as a change leaves it, is the host's: set by a caller with no grant, or
 * a host's limit a session lowered (it stays the host's, so the session cannot raise it again).
 */
export function rateLimitIsHosts(
  grant: KeyGrant | undefined,
  rateLimit: RateLimit | null,
  key?: { rateLimitByHost: boolean },
): boolean {
  if (rateLimit === null) return false;
  return grant === undefined || key?.rateLimitByHost === true;
}
