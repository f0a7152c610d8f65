import { z } from 'zod';
import type { EventTypeCatalog } from '../catalog/events.js';

/**
 * POST /admin/webhooks for a host's events (docs/http-api.md §4.3; docs/decisions.md §5). The URL's
 * own rules are url-policy.ts's.
 */
export function webhookSchemaFor(events: EventTypeCatalog) {
  return z
    .object({
      url: z.string(),
      // A set: duplicates are dropped, order does not matter (docs/decisions.md §5.6).
      events: z.array(events.schema).min(1, 'events must name at least one event kind'),
    })
    .strict();
}

export interface CreateWebhookInput<EventType extends string = string> {
  url: string;
  events: EventType[];
}

/**
 * PATCH /admin/webhooks/{id} for a host's events: the status, or the URL and events (either or
 * both), in one request, never status and subscription together: each is one atomic change.
 */
export function updateWebhookSchemaFor(events: EventTypeCatalog) {
  return z
    .object({
      status: z.enum(['active', 'disabled']).optional(),
      url: z.string().optional(),
      events: z.array(events.schema).min(1, 'events must name at least one event kind').optional(),
    })
    .strict()
    .refine((body) => body.status !== undefined || body.url !== undefined || body.events !== undefined, {
      message: 'send status, or url and/or events',
    })
    .refine((body) => body.status === undefined || (body.url === undefined && body.events === undefined), {
      message: 'change the status, or the url and events, in separate requests',
    });
}

export interface UpdateWebhookInput<EventType extends string = string> {
  status?: 'active' | 'disabled' | undefined;
  url?: string | undefined;
  events?: EventType[] | undefined;
}

/** The longest overlap a rotation may keep the old secret signing: 7 days. */
export const MAX_ROTATION_OVERLAP_SECONDS = 604_800;

/** POST /admin/webhooks/{id}/rotate: an optional body. */
export const rotateWebhookSchema = z
  .object({
    overlapSeconds: z.int().min(0).max(MAX_ROTATION_OVERLAP_SECONDS).optional().meta({
      description:
        'How long the old secret keeps signing beside the new one, in seconds (0 to 604800, 7 days). 0 or absent: the old secret stops at once.',
    }),
  })
  .strict();

export interface RotateWebhookOptions {
  /** How long the old secret keeps signing beside the new one, 0 to 604,800 s. Default 0. */
  overlapSeconds?: number | undefined;
}
