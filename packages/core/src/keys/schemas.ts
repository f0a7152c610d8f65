import { z } from 'zod';
import { SCOPES } from '../scopes.js';

export const scopeSchema = z.enum(SCOPES);

/** POST /admin/keys (spec §4; DESIGN.md §3 "Validation at create"). */
export const createApiKeySchema = z
  .object({
    name: z.string().trim().min(1).max(200),
    scopes: z
      .array(scopeSchema)
      .min(1)
      .refine((scopes) => new Set(scopes).size === scopes.length, 'scopes must not repeat'),
    expiresAt: z.iso.datetime({ offset: true }).optional().nullable(),
  })
  .strict();

export type CreateApiKeyInput = z.input<typeof createApiKeySchema>;
