import { createHash, randomBytes } from 'node:crypto';
import { type ApiKeyRecord, newId, systemClock } from '@keyhook/core';

/** A key record as core would write it; fields can be overridden. */
export function keyRecord(overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  const lookup = `sk_live_${randomBytes(8).toString('hex')}`;
  return {
    id: newId('key', systemClock, (n) => randomBytes(n)),
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
    ...overrides,
  };
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Ids minted in order, so "newest first" has a known answer. */
export function orderedKeyIds(count: number): string[] {
  const base = Date.parse('2026-01-01T00:00:00Z');
  return Array.from({ length: count }, (_, i) =>
    newId('key', { now: () => new Date(base + i * 1000) }, (n) => randomBytes(n)),
  );
}
