import { z } from 'zod';
import type { EventTypeCatalog } from '../catalog/events.js';
import type { SignatureScheme } from '../store/types.js';

/** How an endpoint's deliveries are signed (docs/decisions.md §6.9; docs/http-api.md §6.3). */
export const signatureSchemeSchema = z.enum(['keyhook', 'standard-webhooks']).meta({
  description:
    "How deliveries are signed: keyhook's keyhook-signature header, or the Standard Webhooks webhook-id, webhook-timestamp and webhook-signature headers.",
});

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
      // Absent: the host's delivery.signatureScheme (keyhook unless it says otherwise).
      signatureScheme: signatureSchemeSchema.optional(),
    })
    .strict();
}

export interface CreateWebhookInput<EventType extends string = string> {
  url: string;
  events: EventType[];
  /** How its deliveries are signed. Default: the host's `delivery.signatureScheme`, else `'keyhook'`. */
  signatureScheme?: SignatureScheme | undefined;
}

/**
 * PATCH /admin/webhooks/{id} for a host's events: the status, or the URL, events and signature
 * scheme (any of them), in one request, never status and the rest together: each is one atomic change.
 */
export function updateWebhookSchemaFor(events: EventTypeCatalog) {
  return z
    .object({
      status: z.enum(['active', 'disabled']).optional(),
      url: z.string().optional(),
      events: z.array(events.schema).min(1, 'events must name at least one event kind').optional(),
      signatureScheme: signatureSchemeSchema.optional(),
    })
    .strict()
    .refine((body) => body.status !== undefined || changesSubscription(body), {
      message: 'send status, or url, events and/or signatureScheme',
    })
    .refine((body) => body.status === undefined || !changesSubscription(body), {
      message: 'change the status, or the url, events and signatureScheme, in separate requests',
    });
}

function changesSubscription(body: { url?: unknown; events?: unknown; signatureScheme?: unknown }): boolean {
  return body.url !== undefined || body.events !== undefined || body.signatureScheme !== undefined;
}

export interface UpdateWebhookInput<EventType extends string = string> {
  status?: 'active' | 'disabled' | undefined;
  url?: string | undefined;
  events?: EventType[] | undefined;
  signatureScheme?: SignatureScheme | undefined;
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
