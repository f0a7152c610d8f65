import { z } from 'zod';
import { eventCatalogEntrySchema } from '../catalog/events.js';
import { PORTAL_PERMISSIONS } from './portal-types.js';

/**
 * The portal's own routes, as the OpenAPI document describes them (`keyhook.portal.api.operations`):
 * the routes validate with the request schemas and answer values typed by the response ones, and
 * the portal's pages take their types from these (docs/decisions.md §22.19).
 */

/** `POST /api/exchange`'s body. */
export const portalExchangeSchema = z.strictObject({
  token: z
    .string()
    .max(200)
    .meta({ description: 'The link’s one-time token (`kpl_…`), from its URL’s fragment.' }),
  embedded: z.boolean().optional().meta({
    description:
      'The page is inside a frame: the answer carries the session token for the page to hold in memory, and sets no cookie.',
  }),
});

/** A portal session as its page sees it: who, what it may do, and the host's catalog. */
export const portalSessionViewSchema = z.object({
  id: z.string().meta({ description: 'The session (`ps_…`): the page names it in `x-portal-session`.' }),
  tenantId: z.string(),
  expiresAt: z.iso.datetime(),
  permissions: z.array(z.enum(PORTAL_PERMISSIONS)),
  scopes: z
    .array(z.object({ name: z.string(), description: z.string().optional() }))
    .meta({ description: 'The scopes a key made in this session may carry.' }),
  events: z.array(eventCatalogEntrySchema).meta({ description: "The host's event catalog." }),
  headers: z
    .object({ signature: z.string(), eventId: z.string() })
    .meta({ description: "The host's delivery header names, for a receiver's verification code." }),
  developmentUrls: z
    .boolean()
    .meta({ description: 'Endpoint URLs may be http:// or loopback (development); never in production.' }),
});

/** `GET /api/session`'s answer: the session, and the CSRF token its page sends on every change. */
export const portalSessionAnswerSchema = z.object({
  session: portalSessionViewSchema,
  csrfToken: z
    .string()
    .meta({ description: 'Send it as `x-csrf-token` on every request that changes something.' }),
});

/** `POST /api/exchange`'s answer: the session's, with the token itself for a page in a frame. */
export const portalExchangeAnswerSchema = portalSessionAnswerSchema.extend({
  sessionToken: z
    .string()
    .optional()
    .meta({ description: 'With `embedded` only (`kps_…`): sent as `Authorization: Bearer`, never stored.' }),
});

/** `GET /api/webhooks/stats`'s answer: each endpoint's attempts since `since`. */
export const webhookStatsSchema = z.object({
  since: z.iso.datetime().meta({ description: 'The window’s start: 24 hours before the answer.' }),
  data: z.array(
    z.object({
      webhookId: z.string(),
      succeeded: z.number().int().nonnegative(),
      failed: z.number().int().nonnegative(),
    }),
  ),
});

export type PortalSessionView = z.output<typeof portalSessionViewSchema>;
export type PortalSessionAnswer = z.output<typeof portalSessionAnswerSchema>;
export type PortalExchangeAnswer = z.output<typeof portalExchangeAnswerSchema>;
export type WebhookStats = z.output<typeof webhookStatsSchema>;
