/**
 * `@keyhook/core/http`: for code that speaks HTTP beside keyhook. Adapters translate a
 * framework's request into `KeyhookRequest` and back, guard routes with `GuardResult`, close
 * connections with the lingering close and serve the OpenAPI route; a host's own routes answer
 * as keyhook's do with the error envelope, the same 400 for invalid input, the list
 * conventions, ids of the same shape, the views' schemas and one OpenAPI document (core's
 * README, "Your own routes beside keyhook's"). Each name is a promise listed in
 * `etc/core-http.api.md`.
 */

export { attemptViewSchema, deliveryDetailViewSchema, deliveryViewSchema } from './delivery/delivery-view.js';
export { feedEventViewSchema, feedPageSchema } from './delivery/event-feed.js';
export type { ApiKeyContext, Guard, GuardResult } from './http/handler.js';
export {
  LINGER_MAX_BYTES,
  LINGER_MAX_MS,
  type LingerOptions,
  lingerAfterAnswer,
  lingeringClose,
} from './http/lingering-close.js';
export type {
  HttpMethod,
  KeyhookRequest,
  KeyhookResponse,
  RequestHeaders,
  RouteDefinition,
} from './http/messages.js';
export {
  type ApiOperation,
  type ApiWebhooks,
  type OpenApiInfo,
  type OpenApiServer,
  openApiDocument,
} from './http/openapi-document.js';
export { type OpenApiRoute, type OpenApiRouteOptions, openApiRoute } from './http/openapi-route.js';
export {
  DEFAULT_LIST_BYTE_BUDGET,
  MIN_LIST_BYTE_BUDGET,
  type PageResponse,
  pageOf,
  pageSchema,
  parseListCursor,
  parseListLimit,
} from './http/pagination.js';
export { errorEnvelope, errorResponse } from './http/response.js';
export { canonicalJson } from './idempotency/canonical-json.js';
export { checkIdempotencyKey, IDEMPOTENCY_REFUSALS_NOT_KEPT } from './idempotency/key-rules.js';
export { newId } from './ids.js';
export { DEFAULT_PREFIX } from './keyhook.js';
export { apiKeyViewSchema } from './keys/key-view.js';
export { type RateLimitState, rateLimitHeaders } from './keys/rate-limit.js';
export type {
  PortalExchangeAnswer,
  PortalSessionAnswer,
  PortalSessionView,
  WebhookStats,
} from './portal/portal-contract.js';
export type { Mountable } from './portal/portal-types.js';
export { parseOrThrow, readableText, storableText, validationFailed } from './validation.js';
export { webhookViewSchema } from './webhooks/webhook-view.js';
