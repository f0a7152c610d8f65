import type { ApiKeyRecord } from '../store/types.js';

export type ApiKeyViewStatus = 'active' | 'revoked' | 'expired';

/** The admin view of a key (DESIGN.md §2). It never carries the secret or its hash. */
export interface ApiKeyView {
  id: string;
  keyLookup: string;
  name: string;
  scopes: string[];
  status: ApiKeyViewStatus;
  expiresAt: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export function isExpired(key: ApiKeyRecord, now: Date): boolean {
  return key.expiresAt !== null && key.expiresAt.getTime() <= now.getTime();
}

export function keyStatus(key: ApiKeyRecord, now: Date): ApiKeyViewStatus {
  if (key.status === 'revoked') return 'revoked';
  return isExpired(key, now) ? 'expired' : 'active';
}

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

export function toApiKeyView(key: ApiKeyRecord, now: Date): ApiKeyView {
  return {
    id: key.id,
    keyLookup: key.keyLookup,
    name: key.name,
    scopes: [...key.scopes],
    status: keyStatus(key, now),
    expiresAt: iso(key.expiresAt),
    createdAt: key.createdAt.toISOString(),
    lastUsedAt: iso(key.lastUsedAt),
    revokedAt: iso(key.revokedAt),
  };
}
