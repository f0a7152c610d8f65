import { z } from 'zod';
import type { WebhookRecord } from '../store/types.js';
import { deliveryRateSchema, signatureSchemeSchema, webhookKeyTypeSchema } from './webhook-schemas.js';

const instant = z.iso.datetime();

/**
 * The admin view of a webhook, as the OpenAPI document describes it. It never
 * carries the signing secret. `toWebhookView` is typed by it.
 */
export const webhookViewSchema = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  status: z.enum(['active', 'disabled']),
  disabledReason: z.enum(['manual', 'failures', 'gone']).nullable().meta({
    description:
      'Why a disabled endpoint is disabled: a PATCH (manual), consecutive failures (failures), or its receiver answering 410 Gone (gone).',
  }),
  description: z.string().nullable().meta({
    description: "The customer's own words for the endpoint; null: none.",
  }),
  disabledAt: instant.nullable().meta({
    description: 'When the endpoint was disabled, for disabledReason; null while it is active.',
  }),
  previousSecretExpiresAt: instant.nullable().meta({
    description:
      'Until when the secret replaced by the last rotation (with overlapSeconds) still signs beside the current one; null when that rotation kept none. A past time: it has stopped.',
  }),
  signatureScheme: signatureSchemeSchema,
  keyType: webhookKeyTypeSchema,
  publicKey: z.string().nullable().meta({
    description:
      'whpk_…: the public key receivers verify v1a signatures with, for keyType ed25519; null for hmac. Not a secret.',
  }),
  deliveryRate: deliveryRateSchema,
  createdAt: instant,
  updatedAt: instant,
});

export type WebhookView = z.output<typeof webhookViewSchema>;

/** Creation and rotation: the endpoint and its signing secret, shown this once. */
export const issuedWebhookSchema = z.object({
  webhook: webhookViewSchema,
  secret: z.string().nullable().meta({
    description:
      'whsec_…: the signing secret, shown once. null for keyType ed25519: its secret key is never shown, and receivers verify with webhook.publicKey.',
  }),
});

/** A webhook as the admin endpoints answer it, for your own UI: never the sealed secret. */
export function toWebhookView(webhook: WebhookRecord): WebhookView {
  return {
    id: webhook.id,
    url: webhook.url,
    events: [...webhook.events],
    status: webhook.status,
    disabledReason: webhook.disabledReason,
    description: webhook.description,
    disabledAt: webhook.disabledAt ? webhook.disabledAt.toISOString() : null,
    previousSecretExpiresAt: webhook.previousSecretExpiresAt
      ? webhook.previousSecretExpiresAt.toISOString()
      : null,
    signatureScheme: webhook.signatureScheme,
    keyType: webhook.publicKey === null ? 'hmac' : 'ed25519',
    publicKey: webhook.publicKey,
    deliveryRate: webhook.deliveryRate ? { perSecond: webhook.deliveryRate.perSecond } : null,
    createdAt: webhook.createdAt.toISOString(),
    updatedAt: webhook.updatedAt.toISOString(),
  };
}
