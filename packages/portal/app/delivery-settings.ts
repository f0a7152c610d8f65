import type { DeliveryRate, SignatureScheme, WebhookView } from './api-types.js';

/** Each signature scheme in the words the pages use, in the order they offer them. */
export const SIGNATURE_SCHEMES: readonly { scheme: SignatureScheme; label: string; hint: string }[] = [
  {
    scheme: 'keyhook',
    label: 'keyhook (t=…,v1=…)',
    hint: 'One signature header with a timestamp and a hex HMAC, as @keyhook/webhook-verify reads it.',
  },
  {
    scheme: 'standard-webhooks',
    label: 'Standard Webhooks',
    hint: 'The webhook-id, webhook-timestamp and webhook-signature headers, for Standard Webhooks and Svix libraries.',
  },
];

export function schemeLabel(scheme: SignatureScheme): string {
  return SIGNATURE_SCHEMES.find((option) => option.scheme === scheme)?.label ?? scheme;
}

/** "No limit" or "0.5 per second": always per second, the number as the API holds it. */
export function formatDeliveryRate(rate: DeliveryRate | null): string {
  return rate ? `${rate.perSecond} per second` : 'No limit';
}

/**
 * The delivery settings as a form holds them. `scheme` is '' and `limited` false on a new
 * endpoint until the customer picks one: the host's defaults then apply.
 */
export interface DeliverySettingsDraft {
  scheme: SignatureScheme | '';
  limited: boolean;
  /** The number field's text. */
  perSecond: string;
}

export function draftOf(webhook: WebhookView): DeliverySettingsDraft {
  return {
    scheme: webhook.signatureScheme,
    limited: webhook.deliveryRate !== null,
    perSecond: webhook.deliveryRate ? String(webhook.deliveryRate.perSecond) : '',
  };
}

/** The field's number as typed: the API judges it, so its refusal names the bounds (an empty field is 0). */
function perSecondOf(text: string): DeliveryRate {
  return { perSecond: Number(text) };
}

/** POST /webhooks: only what the customer chose; what is left unset takes the host's default. */
export function createSettingsBody(draft: DeliverySettingsDraft): {
  signatureScheme?: SignatureScheme;
  deliveryRate?: DeliveryRate;
} {
  return {
    ...(draft.scheme ? { signatureScheme: draft.scheme } : {}),
    ...(draft.limited ? { deliveryRate: perSecondOf(draft.perSecond) } : {}),
  };
}

/** PATCH /webhooks/{id}: what differs from the endpoint; an unchecked limit is null, no limit. */
export function changedSettingsBody(
  webhook: WebhookView,
  draft: DeliverySettingsDraft,
): { signatureScheme?: SignatureScheme; deliveryRate?: DeliveryRate | null } {
  const body: { signatureScheme?: SignatureScheme; deliveryRate?: DeliveryRate | null } = {};
  if (draft.scheme && draft.scheme !== webhook.signatureScheme) body.signatureScheme = draft.scheme;
  const deliveryRate = draft.limited ? perSecondOf(draft.perSecond) : null;
  if (deliveryRate?.perSecond !== webhook.deliveryRate?.perSecond) body.deliveryRate = deliveryRate;
  return body;
}
