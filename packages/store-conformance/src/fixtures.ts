import { createHash, randomBytes } from 'node:crypto';
import { newId } from '@keyhook/core/http';
import {
  type ApiKeyRecord,
  type IdempotencyRecord,
  type PortalSessionRecord,
  twinKeyOf,
  type WebhookRecord,
  type WebhookSubscription,
} from '@keyhook/core/store';

/** A key record as core would write it; fields can be overridden. */
export function keyRecord(overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  const lookup = `sk_live_${randomBytes(8).toString('hex')}`;
  return {
    id: newId('key'),
    tenantId: 'tenant_a',
    keyLookup: lookup,
    name: 'CI worker',
    scopes: ['items:read', 'items:write'],
    keyHash: sha256(`${lookup}_${randomBytes(24).toString('hex')}`),
    status: 'active',
    expiresAt: null,
    createdAt: new Date('2026-01-01T00:00:00.123Z'),
    lastUsedAt: null,
    revokedAt: null,
    rateLimit: null,
    rateLimitByHost: false,
    ...overrides,
  };
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * Ids minted in order, a second apart on a clock of the test's own, so "newest first" has a known
 * answer without waiting for the wall clock to move.
 */
export function orderedIds(prefix: string, count: number): string[] {
  const base = Date.parse('2026-01-01T00:00:00Z');
  return Array.from({ length: count }, (_, i) =>
    newId(prefix, { now: () => new Date(base + i * 1000) }, (n) => randomBytes(n)),
  );
}

/** A webhook record as core would write it; the twin key follows url and events unless given. */
export function webhookRecord(overrides: Partial<WebhookRecord> = {}): WebhookRecord {
  const url = overrides.url ?? `https://hooks.example.com/${randomBytes(4).toString('hex')}`;
  const events = overrides.events ?? ['run.completed', 'run.failed'];
  return {
    id: newId('wh'),
    tenantId: 'tenant_a',
    url,
    events,
    twinKey: sha256(`${url}\n${[...events].sort().join(',')}`),
    status: 'active',
    disabledReason: null,
    disabledAt: null,
    description: null,
    secretSealed: `sealed:${randomBytes(16).toString('hex')}`,
    previousSecretSealed: null,
    previousSecretExpiresAt: null,
    signatureScheme: 'keyhook',
    deliveryRate: null,
    publicKey: null,
    createdAt: new Date('2026-01-01T00:00:00.123Z'),
    updatedAt: new Date('2026-01-01T00:00:00.123Z'),
    ...overrides,
  };
}

/** A change of url and events for `from`, with the twin key core would compute. */
export function subscriptionOf(
  url: string,
  events: readonly string[],
  from: WebhookRecord,
): WebhookSubscription {
  const sorted = [...new Set(events)].sort();
  return { url, events: sorted, twinKey: twinKeyOf(url, sorted), from: from.twinKey };
}

export const T0 = new Date('2026-03-01T12:00:00.000Z');

/** An in-progress idempotency claim at T0: locked for 60 s, kept for 24 h. */
export function idempotencyRecord(overrides: Partial<IdempotencyRecord> = {}): IdempotencyRecord {
  return {
    tenantId: 'tenant_a',
    key: `idem-${randomBytes(6).toString('hex')}`,
    fingerprint: sha256('POST /admin/webhooks {}'),
    claimId: randomBytes(12).toString('hex'),
    state: 'in_progress',
    responseSealed: null,
    createdAt: T0,
    lockedUntil: new Date(T0.getTime() + 60_000),
    expiresAt: new Date(T0.getTime() + 86_400_000),
    ...overrides,
  };
}

/**
 * A portal session as core mints it at T0: not exchanged, open for an hour, its link hash random
 * (so unique across the suite), every permission, any of the host's scopes.
 */
export function portalSessionRecord(overrides: Partial<PortalSessionRecord> = {}): PortalSessionRecord {
  return {
    id: newId('ps'),
    tenantId: 'tenant_a',
    linkHash: sha256(`kpl_${randomBytes(24).toString('hex')}`),
    sessionHash: null,
    permissions: ['keys:read', 'keys:write', 'webhooks:read', 'webhooks:write'],
    scopes: null,
    createdAt: T0,
    expiresAt: new Date(T0.getTime() + 3_600_000),
    exchangedAt: null,
    revokedAt: null,
    ...overrides,
  };
}
