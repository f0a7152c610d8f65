/**
 * @keyhook/webhook-verify/web: the WebCrypto build for Deno, Bun, Workers and browsers. Nothing
 * reachable from here imports node:*, so a bundle for those runtimes stays free of node:crypto.
 */
export {
  DEFAULT_TOLERANCE_SECONDS,
  EVENT_ID_HEADER,
  MAX_HEADER_ENTRIES,
  MAX_HEADER_LENGTH,
  SIGNATURE_HEADER,
} from './constants.js';
export {
  isWebhookVerificationError,
  VERIFICATION_ERROR_CODES,
  WebhookVerificationError,
  type WebhookVerificationErrorCode,
} from './errors.js';
export type { HeadersLike, WebhookHeaderNames } from './header-names.js';
export type { AnyWebhookEvents, WebhookEvent, WebhookEventMap } from './payload.js';
export { type RequestLike, verifyRequest } from './request.js';
export type { WebhookScheme } from './scheme.js';
export {
  type ParsedSignatureHeader,
  parseSignatureHeader,
  type SignatureHeaderValue,
} from './signature-header.js';
export type { SignEventOptions, SignedDelivery, SignOptions, WebhookEventInput } from './signed-delivery.js';
export { signAsync, signEventAsync, verifyAsync } from './subtle-crypto.js';
export type { DeliveryHeaders, TimeInput, VerifyOptions, WebhookSecret } from './verification.js';
