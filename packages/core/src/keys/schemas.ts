import { z } from 'zod';
import { DEFAULT_SCOPES, ScopeCatalog } from '../catalog/scopes.js';
import { storableText } from '../validation.js';

/** POST /admin/keys for a host's scopes (spec §4; DESIGN.md §3 "Validation at create"). */
export function apiKeySchemaFor(scopes: ScopeCatalog) {
  return z
    .object({
      name: storableText().trim().min(1).max(200),
      scopes: z
        .array(scopes.schema)
        .min(1)
        .refine((list) => new Set(list).size === list.length, 'scopes must not repeat'),
      expiresAt: z.iso.datetime({ offset: true }).optional().nullable(),
    })
    .strict();
}

/** POST /admin/keys with the default (spec §5) scopes. */
export const createApiKeySchema = apiKeySchemaFor(new ScopeCatalog(DEFAULT_SCOPES));

export interface CreateApiKeyInput<Scope extends string = string> {
  name: string;
  scopes: Scope[];
  expiresAt?: string | null | undefined;
}
