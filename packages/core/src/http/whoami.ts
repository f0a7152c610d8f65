import { z } from 'zod';
import { jsonResponse } from './response.js';
import type { RouteSpec } from './route-spec.js';

/** GET /whoami: any valid key, no scope, so a client can check the key it holds. */
export const whoamiRoute: RouteSpec = {
  method: 'GET',
  path: '/whoami',
  doc: {
    summary: 'Who the presented API key is: any valid key, no scope',
    success: 200,
    response: z.object({
      key: z.object({
        id: z.string(),
        keyLookup: z.string(),
        scopes: z.array(z.string()),
        expiresAt: z.iso.datetime().nullable(),
      }),
    }),
  },
  auth: 'apiKey',
  body: 'none',
  run: async ({ apiKey }) =>
    jsonResponse(200, {
      key: {
        id: apiKey.id,
        keyLookup: apiKey.keyLookup,
        scopes: apiKey.scopes,
        expiresAt: apiKey.expiresAt ? apiKey.expiresAt.toISOString() : null,
      },
    }),
};
