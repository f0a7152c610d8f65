import { z } from 'zod';
import type { Clock } from '../clock.js';
import { updateApiKeySchema } from '../keys/key-schemas.js';
import type { ApiKeyService } from '../keys/key-service.js';
import { apiKeyViewSchema, toApiKeyView } from '../keys/key-view.js';
import { LIST_QUERY, pageSchema, parsePageRequest, toPage } from './pagination.js';
import { jsonResponse } from './response.js';
import type { RouteSpec } from './route-spec.js';

const oneKey = z.object({ key: apiKeyViewSchema });
const issuedKey = z.object({
  key: apiKeyViewSchema,
  secret: z.string().meta({
    description:
      'The full key, shown once: sk_live_<16 hex>_<48 hex> in the default format, or the server’s own prefix (and checksum).',
  }),
});

/** The admin key endpoints (docs/http-api.md §4.1; success codes and bodies from docs/decisions.md §1.7). */
export function adminKeyRoutes(keys: ApiKeyService, clock: Clock, listByteBudget: number): RouteSpec[] {
  const view = (key: Parameters<typeof toApiKeyView>[0]) => toApiKeyView(key, clock.now());
  return [
    {
      method: 'POST',
      path: '/admin/keys',
      doc: {
        summary: 'Create an API key; its secret is shown once',
        success: 201,
        response: issuedKey,
        requestBody: keys.createSchema,
      },
      auth: 'admin',
      body: 'json',
      run: async ({ admin, body }) => {
        const { key, secret } = await keys.create(admin.tenantId, body as never, admin.grant);
        return jsonResponse(201, { key: view(key), secret });
      },
    },
    {
      method: 'GET',
      path: '/admin/keys',
      doc: {
        summary: 'List API keys, newest first',
        success: 200,
        response: pageSchema(apiKeyViewSchema),
        query: LIST_QUERY,
      },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, query }) => {
        const page = parsePageRequest(query, 'key');
        const rows = await keys.list(admin.tenantId, page.limit + 1, page.before);
        return jsonResponse(200, toPage(rows, page.limit, view, listByteBudget));
      },
    },
    {
      method: 'GET',
      path: '/admin/keys/:keyId',
      doc: { summary: 'Read an API key (never its secret)', success: 200, response: oneKey },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params }) =>
        jsonResponse(200, { key: view(await keys.get(admin.tenantId, params.keyId!)) }),
    },
    {
      method: 'PATCH',
      path: '/admin/keys/:keyId',
      doc: {
        summary: "Change a key's name or rate limit",
        success: 200,
        response: oneKey,
        requestBody: updateApiKeySchema,
      },
      auth: 'admin',
      body: 'json',
      run: async ({ admin, params, body }) =>
        jsonResponse(200, {
          key: view(await keys.update(admin.tenantId, params.keyId!, body as never, admin.grant)),
        }),
    },
    {
      method: 'POST',
      path: '/admin/keys/:keyId/rotate',
      doc: {
        summary: 'Rotate a key in place: the old secret stops at once',
        success: 200,
        response: issuedKey,
        // key_revoked, key_expired: only an active key rotates; rotation_conflict: a concurrent rotate won.
        errors: [409],
      },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params }) => {
        const { key, secret } = await keys.rotate(admin.tenantId, params.keyId!, admin.grant);
        return jsonResponse(200, { key: view(key), secret });
      },
    },
    {
      method: 'DELETE',
      path: '/admin/keys/:keyId',
      doc: { summary: 'Revoke a key (repeating it is harmless)', success: 200, response: oneKey },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params }) =>
        jsonResponse(200, { key: view(await keys.revoke(admin.tenantId, params.keyId!, admin.grant)) }),
    },
  ];
}
