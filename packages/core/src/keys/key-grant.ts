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

/** Refuses a key rate limit that allows more requests per second than the grant's ceiling. */
export function assertWithinCeiling(
  grant: KeyGrant | undefined,
  rateLimit: RateLimit | null | undefined,
): void {
  const ceiling = grant?.rateCeiling;
  if (ceiling === undefined || ceiling === null || rateLimit === undefined || rateLimit === null) return;
  if (rateLimit.limit / rateLimit.window <= ceiling.limit / ceiling.window) return;
  throw new KeyhookError(
    'forbidden',
    `This session may not allow more than ${ceiling.limit} requests per ${ceiling.window} s.`,
    { details: [{ path: 'rateLimit', message: 'above the plan’s rate limit', ceiling }] },
  );
}
