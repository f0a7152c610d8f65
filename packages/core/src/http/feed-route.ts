import { type EventsFeed, FEED_QUERY, feedPageSchema } from '../delivery/event-feed.js';
import { jsonResponse } from './response.js';
import type { RouteSpec } from './route-spec.js';

/**
 * GET /events (docs/http-api.md §4.8): the key's tenant's events in feed order, for a receiver
 * catching up on what it missed. An API-key route, with the scope the host's option names.
 */
export function feedRoute(feed: EventsFeed, scope: string): RouteSpec {
  return {
    method: 'GET',
    path: '/events',
    doc: {
      summary: "The key's tenant's events since a given one, oldest first, with their deliveries",
      success: 200,
      response: feedPageSchema,
      query: FEED_QUERY,
      errors: [404, 410],
    },
    auth: 'apiKey',
    scope,
    body: 'none',
    run: async ({ apiKey, query }) => jsonResponse(200, await feed.read(apiKey.tenantId, query)),
  };
}
