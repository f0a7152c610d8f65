import { z } from 'zod';
import type { ApiKeyRecord } from '../store/types.js';
import { rateLimitSchema } from './rate-limit.js';

const instant = z.iso.datetime();

/**
 * The admin view of a key, as the OpenAPI document describes it. It never
 * carries the secret or its hash. `toApiKeyView` is typed by it.
 */
export const apiKeyViewSchema = z.object({
  id: z.string(),
  keyLookup: z
    .string()
    .meta({ description: '<prefix><16 hex> (sk_live_… by default): the key id a full key starts with.' }),
  name: z.string(),
  scopes: z.array(z.string()),
  status: z.enum(['active', 'revoked', 'expired']),
  expiresAt: instant.nullable(),
  createdAt: instant,
  lastUsedAt: instant.nullable(),
  revokedAt: instant.nullable(),
  rateLimit: rateLimitSchema
    .nullable()
    .meta({ description: "The key's own rate limit; null: the server's default applies, if any." }),
});

export type ApiKeyView = z.output<typeof apiKeyViewSchema>;
export type ApiKeyViewStatus = ApiKeyView['status'];

export function isExpired(key: ApiKeyRecord, now: Date): boolean {
  return key.expiresAt !== null && key.expiresAt.getTime() <= now.getTime();
}

export function keyStatus(key: ApiKeyRecord, now: Date): ApiKeyViewStatus {
  if (key.status === 'revoked') return 'revoked';
  return isExpired(key, now) ? 'expired' : 'active';
}

const iso = (date: Date | null): string | null => (date ? date.toISOString() : null);

/**
 * A key as the admin endpoints answer it, for your own UI: never the hash. `now` decides
 * whether it shows as `expired`.
 */
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
    rateLimit: key.rateLimit ? { ...key.rateLimit } : null,
  };
}
