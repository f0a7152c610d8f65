import { z } from 'zod';
import type { EventTypeCatalog } from '../catalog/events.js';
import { ENDPOINT_RATE_BOUNDS } from '../delivery/endpoint-rate.js';
import type { DeliveryRate, SignatureScheme } from '../store/types.js';
import { readableText } from '../validation.js';
import { WEBHOOK_SECRET_BYTES, type WebhookKeyType, webhookSecretProblem } from './signing-secret.js';

/** How an endpoint's deliveries are signed (docs/decisions.md §6.9; docs/http-api.md §6.3). */
export const signatureSchemeSchema = z.enum(['keyhook', 'standard-webhooks']).meta({
  description:
    "How deliveries are signed: keyhook's keyhook-signature header, or the Standard Webhooks webhook-id, webhook-timestamp and webhook-signature headers.",
});

/** What an endpoint signs with (docs/decisions.md §6.10). */
export const webhookKeyTypeSchema = z.enum(['hmac', 'ed25519']).meta({
  description:
    "What the endpoint signs with: a shared secret (hmac: v1 signatures), or an ed25519 key pair (ed25519: Standard Webhooks' v1a signatures, which receivers verify with the endpoint's publicKey; the secret key is never shown).",
});

/** An endpoint's delivery rate (docs/decisions.md §8.18; docs/http-api.md §4.3), or null for none. */
export const deliveryRateSchema = z
  .object({
    perSecond: z
      .number()
      .min(ENDPOINT_RATE_BOUNDS.min, `must be at least ${ENDPOINT_RATE_BOUNDS.min}`)
      .max(ENDPOINT_RATE_BOUNDS.max, `must be at most ${ENDPOINT_RATE_BOUNDS.max}`)
      .meta({
        description: `The most deliveries per second sent to this endpoint, ${ENDPOINT_RATE_BOUNDS.min} to ${ENDPOINT_RATE_BOUNDS.max}; fractions allowed (0.5: one every 2 s).`,
      }),
  })
  .strict()
  .nullable()
  .meta({
    description:
      'The most deliveries per second sent to this endpoint, across every worker; deliveries over it wait for their turn, neither failed nor counted as attempts. null: no limit.',
  });

/** `rateLimit`, the body field's old name: the same, still taken (docs/http-api.md §4.2). */
const deprecatedRateLimitSchema = deliveryRateSchema.optional().meta({
  deprecated: true,
  description: 'Deprecated: the old name of deliveryRate, taken with the same meaning. Send deliveryRate.',
});

/** An endpoint's rate under either of its names; both at once is refused, naming them. */
function checkOneRate(body: { deliveryRate?: unknown; rateLimit?: unknown }, ctx: z.RefinementCtx): void {
  if (body.deliveryRate === undefined || body.rateLimit === undefined) return;
  for (const path of ['deliveryRate', 'rateLimit']) {
    ctx.addIssue({
      code: 'custom',
      path: [path],
      message: 'send deliveryRate or rateLimit (its deprecated name), not both',
    });
  }
}

/** The rate a body sent, under either name: undefined when it sent none. */
export function sentRate(body: {
  deliveryRate?: DeliveryRate | null | undefined;
  rateLimit?: DeliveryRate | null | undefined;
}): DeliveryRate | null | undefined {
  return body.deliveryRate !== undefined ? body.deliveryRate : body.rateLimit;
}

/**
 * The customer's own words for an endpoint (docs/decisions.md §22.16): text that renders as it
 * reads, up to 500 characters; blank is none.
 */
export const webhookDescriptionSchema = readableText()
  .trim()
  .max(500)
  .transform((text) => (text === '' ? null : text))
  .meta({ description: 'Your own words for the endpoint, up to 500 characters; empty: none.' });

/**
 * A signing secret the host already has (docs/decisions.md §6.1): moving from Svix or another
 * Standard Webhooks sender, its receivers keep theirs. Shown in the answer once, as a new one is.
 */
export const webhookSecretSchema = z
  .string()
  .superRefine((value, ctx) => {
    const problem = webhookSecretProblem(value);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({
    description: `A signing secret to use instead of a new one: whsec_ and base64 of ${WEBHOOK_SECRET_BYTES.min} to ${WEBHOOK_SECRET_BYTES.max} bytes, as Svix and other Standard Webhooks senders issue them. Absent: keyhook makes one.`,
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
      events: z.array(events.schema).min(1, 'must name at least one event type'),
      // Absent: the host's delivery.signatureScheme (keyhook unless it says otherwise).
      signatureScheme: signatureSchemeSchema.optional(),
      // Absent: the host's delivery.deliveryRate (none unless it says otherwise); null: none.
      deliveryRate: deliveryRateSchema.optional(),
      rateLimit: deprecatedRateLimitSchema,
      // Absent: a new one.
      secret: webhookSecretSchema.optional(),
      // Absent: hmac. ed25519 signs Standard Webhooks' v1a, so it needs that scheme.
      keyType: webhookKeyTypeSchema.optional(),
      description: webhookDescriptionSchema.nullable().optional(),
    })
    .strict()
    .superRefine((body, ctx) => {
      checkKeyType(body, ctx, true);
      checkOneRate(body, ctx);
    });
}

/**
 * An ed25519 key pair is minted by keyhook and signs only Standard Webhooks deliveries: not with a
 * `secret` the host gives, and not under keyhook's scheme (docs/decisions.md §6.10).
 */
function checkKeyType(
  body: {
    keyType?: WebhookKeyType | undefined;
    secret?: string | undefined;
    signatureScheme?: SignatureScheme | undefined;
  },
  ctx: z.RefinementCtx,
  create: boolean,
): void {
  if (body.keyType !== 'ed25519') return;
  if (body.secret !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['secret'],
      message: 'keyhook makes the key pair of an ed25519 endpoint: send secret only with keyType hmac',
    });
  }
  if (create && body.signatureScheme === 'keyhook') {
    ctx.addIssue({
      code: 'custom',
      path: ['keyType'],
      message: 'ed25519 signs Standard Webhooks deliveries (v1a): use signatureScheme standard-webhooks',
    });
  }
}

export interface CreateWebhookInput<EventType extends string = string> {
  url: string;
  events: EventType[];
  /** How its deliveries are signed. Default: the host's `delivery.signatureScheme`, else `'keyhook'`. */
  signatureScheme?: SignatureScheme | undefined;
  /** Its delivery rate; null: none. Default: the host's `delivery.deliveryRate`, else none. */
  deliveryRate?: DeliveryRate | null | undefined;
  /**
   * `deliveryRate` under its old name, the same; not with it.
   * @deprecated Use `deliveryRate`.
   */
  rateLimit?: DeliveryRate | null | undefined;
  /** A signing secret the host already has (`whsec_` and base64 of 24 to 64 bytes). Default: a new one. */
  secret?: string | undefined;
  /**
   * `'ed25519'`: an ed25519 key pair, whose public key reads show; it signs Standard Webhooks `v1a`
   * (the scheme then defaults to `'standard-webhooks'`). Default `'hmac'`: a shared secret.
   */
  keyType?: WebhookKeyType | undefined;
  /** Your customer's own words for the endpoint, up to 500 characters. Default: none. */
  description?: string | null | undefined;
}

/**
 * PATCH /admin/webhooks/{id} for a host's events: the status, or the URL, events, signature
 * scheme, delivery rate and description (any of them), in one request, never status and the
 * rest together: each is one atomic change.
 */
export function updateWebhookSchemaFor(events: EventTypeCatalog) {
  return z
    .object({
      status: z.enum(['active', 'disabled']).optional(),
      url: z.string().optional(),
      events: z.array(events.schema).min(1, 'must name at least one event type').optional(),
      signatureScheme: signatureSchemeSchema.optional(),
      deliveryRate: deliveryRateSchema.optional(),
      rateLimit: deprecatedRateLimitSchema,
      description: webhookDescriptionSchema.nullable().optional(),
    })
    .strict()
    .refine((body) => body.status !== undefined || changesSubscription(body), {
      message: 'send status, or url, events, signatureScheme, deliveryRate and/or description',
    })
    .superRefine((body, ctx) => {
      checkOneRate(body, ctx);
      if (body.status === undefined || !changesSubscription(body)) return;
      // The rate under the name the client sent it.
      const rate =
        body.rateLimit !== undefined && body.deliveryRate === undefined ? 'rateLimit' : 'deliveryRate';
      ctx.addIssue({
        code: 'custom',
        message: `change the status, or the url, events, signatureScheme, ${rate} and description, in separate requests`,
      });
    });
}

function changesSubscription(body: {
  url?: unknown;
  events?: unknown;
  signatureScheme?: unknown;
  deliveryRate?: unknown;
  rateLimit?: unknown;
  description?: unknown;
}): boolean {
  return (
    body.url !== undefined ||
    body.events !== undefined ||
    body.signatureScheme !== undefined ||
    body.deliveryRate !== undefined ||
    body.rateLimit !== undefined ||
    body.description !== undefined
  );
}

export interface UpdateWebhookInput<EventType extends string = string> {
  status?: 'active' | 'disabled' | undefined;
  url?: string | undefined;
  events?: EventType[] | undefined;
  signatureScheme?: SignatureScheme | undefined;
  /** The new delivery rate; null removes it. */
  deliveryRate?: DeliveryRate | null | undefined;
  /**
   * `deliveryRate` under its old name, the same; not with it.
   * @deprecated Use `deliveryRate`.
   */
  rateLimit?: DeliveryRate | null | undefined;
  /** null (or blank) removes it. */
  description?: string | null | undefined;
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
    secret: webhookSecretSchema.optional(),
    // Absent: the endpoint's current kind of key.
    keyType: webhookKeyTypeSchema.optional(),
  })
  .strict()
  .superRefine((body, ctx) => checkKeyType(body, ctx, false));

export interface RotateWebhookOptions {
  /** How long the old secret keeps signing beside the new one, 0 to 604,800 s. Default 0. */
  overlapSeconds?: number | undefined;
  /** The new secret, one the host already has (`whsec_` and base64 of 24 to 64 bytes). Default: a new one. */
  secret?: string | undefined;
  /** The kind of the new key; default the endpoint's current one. `'ed25519'` needs the Standard Webhooks scheme. */
  keyType?: WebhookKeyType | undefined;
}
