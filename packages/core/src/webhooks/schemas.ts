import { z } from 'zod';
import { EVENT_TYPES } from './events.js';

/** POST /admin/webhooks (spec §4; DESIGN.md §5). The URL's own rules are url-policy.ts's. */
export const createWebhookSchema = z
  .object({
    url: z.string(),
    // A set: duplicates are dropped, order does not matter (DESIGN.md §5).
    events: z.array(z.enum(EVENT_TYPES)).min(1, 'events must name at least one event kind'),
  })
  .strict();

export type CreateWebhookInput = z.input<typeof createWebhookSchema>;

/** PATCH /admin/webhooks/{id}. */
export const updateWebhookSchema = z.object({ status: z.enum(['active', 'disabled']) }).strict();

export type UpdateWebhookInput = z.input<typeof updateWebhookSchema>;
