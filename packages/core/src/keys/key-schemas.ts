import { z } from 'zod';
import type { ScopeCatalog } from '../catalog/scopes.js';
import { readableText } from '../validation.js';
import { type RateLimit, rateLimitSchema } from './rate-limit.js';

const keyName = () => readableText().trim().min(1).max(200);

/** A key's own limit; `null` or left out: the keyhook's default applies. */
const keyRateLimit = rateLimitSchema.nullable().meta({
  description:
    "This key's rate limit, counted per instance in fixed windows. null: the server's default applies, if it has one.",
});

/** POST /admin/keys for a host's scopes (docs/http-api.md §4.1; docs/decisions.md §3.11). */
export function apiKeySchemaFor(scopes: ScopeCatalog) {
  return z
    .object({
      name: keyName(),
      // At least one when the host declares any: a key that may do nothing is a mistake. A host
      // without scopes mints keys that carry none (docs/decisions.md §3.11).
      scopes: z
        .array(scopes.schema)
        .min(scopes.names.length === 0 ? 0 : 1)
        .refine((list) => new Set(list).size === list.length, 'must not repeat a scope'),
      expiresAt: z.iso.datetime({ offset: true }).optional().nullable(),
      rateLimit: keyRateLimit.optional(),
    })
    .strict();
}

/** PATCH /admin/keys/{id}: the fields that may change after create; at least one. */
export const updateApiKeySchema = z
  .object({ name: keyName().optional(), rateLimit: keyRateLimit.optional() })
  .strict()
  .refine((input) => input.name !== undefined || input.rateLimit !== undefined, {
    message: 'send name, rateLimit or both',
  });

export interface UpdateApiKeyInput {
  name?: string | undefined;
  rateLimit?: RateLimit | null | undefined;
}

export interface CreateApiKeyInput<Scope extends string = string> {
  name: string;
  scopes: Scope[];
  expiresAt?: string | null | undefined;
  rateLimit?: RateLimit | null | undefined;
}
