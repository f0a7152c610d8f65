/**
 * `@keyhook/core`: what a host app uses. Every name here is a semver promise, listed in
 * `etc/core.api.md`. Stores build on `@keyhook/core/store` instead.
 */

export type { AdminSessionOptions } from './admin/session.js';
export { type AdminTokenOptions, createAdminToken } from './admin/token.js';
export type {
  EventCatalog,
  EventData,
  EventDefinition,
  EventDoc,
  EventInput,
  EventMap,
} from './catalog/events.js';
export type { ScopeDefinition, ScopeInput, ScopeNameOf } from './catalog/scopes.js';
export {
  type Clock,
  cryptoRandomBytes,
  type RandomBytes,
  systemClock,
  systemTimers,
  type TimerHandle,
  type TimerOptions,
  type Timers,
} from './clock.js';
export { type EncryptionKeyInput, generateEncryptionKey } from './crypto/secret-box.js';
export type { PublishedEvent, PublishInput, PublishOptions } from './delivery/publish.js';
export type { AutoDisableRule } from './delivery/rules.js';
export { DEFAULT_RETRY_SCHEDULE_MS } from './delivery/schedule.js';
export type { RecoverInput } from './delivery/service.js';
export type { DeliveryHeaderNames } from './delivery/signature.js';
export { DELIVERY_STATES, type DeliveryState } from './delivery/states.js';
export {
  type AttemptView,
  attemptViewSchema,
  type DeliveryDetailView,
  type DeliveryView,
  deliveryDetailViewSchema,
  deliveryViewSchema,
  toAttemptView,
  toDeliveryDetailView,
  toDeliveryView,
} from './delivery/view.js';
export type { DeliveryWorkerOptions } from './delivery/worker.js';
export {
  ERROR_STATUS,
  type ErrorCode,
  type ErrorDetail,
  isKeyhookError,
  KeyhookError,
  type KeyhookErrorOptions,
} from './errors.js';
export type { ApiKeyContext, GuardResult } from './http/handler.js';
export {
  type ApiOperation,
  type ApiWebhooks,
  type OpenApiInfo,
  type OpenApiServer,
  openApiDocument,
} from './http/openapi.js';
export { type OpenApiRoute, type OpenApiRouteOptions, openApiRoute } from './http/openapi-route.js';
export {
  DEFAULT_LIMIT,
  encodeCursor,
  MAX_LIMIT,
  type PageResponse,
  pageOf,
  pageSchema,
  parseListCursor,
  parseListLimit,
} from './http/pagination.js';
export { errorEnvelope, errorResponse } from './http/response.js';
export type {
  HttpMethod,
  KeyhookRequest,
  KeyhookResponse,
  RequestHeaders,
  RouteDefinition,
} from './http/types.js';
export { canonicalJson } from './idempotency/canonical-json.js';
export { type IdPrefix, newId } from './ids.js';
export {
  createKeyhook,
  DEFAULT_PREFIX,
  type DeliveryOptions,
  type EventMapOf,
  type EventsOf,
  type Keyhook,
  type KeyhookOptions,
  type ScopeOf,
  type TelemetryOptions,
} from './keyhook.js';
export type { ApiKeyFormat } from './keys/format.js';
export {
  type RateLimit,
  type RateLimitOptions,
  type RateLimitState,
  rateLimitHeaders,
} from './keys/rate-limit.js';
export type { CreateApiKeyInput, UpdateApiKeyInput } from './keys/schemas.js';
export { type ApiKeyView, type ApiKeyViewStatus, apiKeyViewSchema, toApiKeyView } from './keys/view.js';
export { consoleLogger, type Logger, silentLogger } from './logger.js';
// The services on a keyhook, as interfaces: only createKeyhook builds them.
export type {
  ApiKeys,
  Deliveries,
  DeliveryWorker,
  EventPublisher,
  IssuedApiKey,
  IssuedWebhook,
  Webhooks,
} from './services.js';
export { MemoryStore } from './store/memory.js';
// The Store contract's types: `KeyhookOptions.store` names it, and the services return its
// records. Building a store takes the helpers in `@keyhook/core/store` too.
export type {
  ApiKeyChanges,
  ApiKeyRecord,
  ApiKeyStatus,
  AttemptCompletion,
  AttemptCompletionOutcome,
  AttemptRecord,
  DeliveryDetail,
  DeliveryListPage,
  DeliveryRecord,
  EventRecord,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyRecord,
  LeasedDelivery,
  LeaseRequest,
  ListPage,
  PublishLease,
  PublishOutcome,
  PurgeOutcome,
  QueueDepth,
  RequeueOutcome,
  RotateOutcome,
  Store,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
  WebhookSubscription,
  WebhookSubscriptionOutcome,
} from './store/types.js';
export {
  isStorableText,
  parseOrThrow,
  storableText,
  UNSTORABLE_TEXT_MESSAGE,
  validationFailed,
} from './validation.js';
export type { CreateWebhookInput, RotateWebhookOptions, UpdateWebhookInput } from './webhooks/schemas.js';
export type { LookupAll, ResolvedAddress, UrlPolicy } from './webhooks/url-policy.js';
export { toWebhookView, type WebhookView, webhookViewSchema } from './webhooks/view.js';
