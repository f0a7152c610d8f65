/**
 * `@keyhook/core`: what a host app uses. Every name here is a semver promise, listed in
 * `etc/core.api.md`, and each group says why it is public; `test/public-api.test.ts` fails on a
 * name that nothing outside core imports and no document names. A store author uses
 * `@keyhook/core/store` (src/for-stores.ts) instead; no value is exported by both entries but the
 * two loggers.
 *
 * The groups, and why each is public (the exports are sorted by file, so they are named here):
 * - createKeyhook and its options: the one function a host calls, and what it configures, with
 *   the catalog types (scopes, events) that type it.
 * - The services on a keyhook (`keys`, `webhooks`, `events`, `deliveries`, `createWorker()`), as
 *   interfaces since only createKeyhook builds them, with their inputs.
 * - The views a client is answered with, and their zod schemas: the services return records (a
 *   key's hash, a sealed secret), which host code maps to a view before answering; the schema is
 *   what the OpenAPI document is written from, for a host route that answers with that view.
 * - The Store contract's types: `KeyhookOptions.store` names it and the services return its
 *   records; `@keyhook/core/store` exports the same types (API Extractor needs each entry's
 *   signatures exported from that entry) and every helper a store uses.
 * - The errors: one type with a closed list of codes, and the table from code to status.
 * - What the adapters translate: the request and response core speaks, the guard's result, and
 *   the OpenAPI route they serve.
 * - What a host's own routes use to answer as keyhook's do: the error envelope, the same 400 for
 *   invalid input, the list conventions, ids of the same shape, and one OpenAPI document for
 *   both (core's README, "Your own routes beside keyhook's").
 * - Tools beside keyhook: a development admin token, the master key, the loggers, and the
 *   in-memory store for tests and development.
 */

export type { AdminSessionOptions } from './admin/session.js';
export { type AdminTokenOptions, createAdminToken } from './admin/token.js';
export type {
  EventCatalog,
  EventCatalogEntry,
  EventData,
  EventDefinition,
  EventDoc,
  EventInput,
  EventMap,
} from './catalog/events.js';
export type { ScopeDefinition, ScopeInput, ScopeNameOf } from './catalog/scopes.js';
export type { Clock, RandomBytes, TimerHandle, TimerOptions, Timers } from './clock.js';
export type { EncryptionKeyInput } from './crypto/secret-box.js';
export { generateEncryptionKey } from './crypto/secret-box.js';
export type { DeliveryListFilter, RecoverInput } from './delivery/delivery-service.js';
export {
  type AttemptView,
  attemptViewSchema,
  type DeliveryDetailView,
  type DeliveryView,
  deliveryDetailViewSchema,
  deliveryViewSchema,
  toDeliveryDetailView,
  toDeliveryView,
} from './delivery/delivery-view.js';
export type { EndpointRateRule } from './delivery/endpoint-rate.js';
export type { EndpointConcurrency } from './delivery/endpoint-slots.js';
export {
  type EventsFeedOption,
  type FeedEventView,
  type FeedPageView,
  feedEventViewSchema,
  feedPageSchema,
} from './delivery/event-feed.js';
export type { PublishedEvent, PublishInput, PublishOptions } from './delivery/publish.js';
export type { AutoDisableRule } from './delivery/rules.js';
export type { DeliveryHeaderNames } from './delivery/signature.js';
export type { DeliveryStatus } from './delivery/states.js';
export type { SentTestEvent, TestEventInput } from './delivery/test-event.js';
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
export {
  createKeyhook,
  DEFAULT_PREFIX,
  type DeliveryOptions,
  type EventMapOf,
  type EventsOf,
  type Keyhook,
  type KeyhookOptions,
  type PortalOptions,
  type ScopeOf,
  type TelemetryOptions,
} from './keyhook.js';
export type { ApiKeyFormat } from './keys/format.js';
export type { KeyGrant } from './keys/key-grant.js';
export type { CreateApiKeyInput, UpdateApiKeyInput } from './keys/key-schemas.js';
export { type ApiKeyView, type ApiKeyViewStatus, apiKeyViewSchema, toApiKeyView } from './keys/key-view.js';
export type { RateLimit, RateLimitOptions } from './keys/rate-limit.js';
export { type RateLimitState, rateLimitHeaders } from './keys/rate-limit.js';
export { consoleLogger, type Logger, silentLogger } from './logger.js';
export type {
  PortalExchangeAnswer,
  PortalSessionAnswer,
  PortalSessionView,
  WebhookStats,
} from './portal/portal-contract.js';
export {
  type CreatePortalSessionInput,
  type Mountable,
  PORTAL_PERMISSIONS,
  type Portal,
  type PortalApi,
  type PortalPermission,
  type PortalSessionLink,
} from './portal/portal-types.js';
export type {
  ApiKeys,
  Deliveries,
  DeliveryWorker,
  EventPublisher,
  IssuedApiKey,
  IssuedWebhook,
  Webhooks,
} from './service-interfaces.js';
export { MemoryStore } from './store/memory.js';
export type {
  ApiKeyChanges,
  ApiKeyRecord,
  ApiKeyStatus,
  AttemptCompletion,
  AttemptCompletionOutcome,
  AttemptCounts,
  AttemptRecord,
  DeliveryDetail,
  DeliveryListPage,
  DeliveryRecord,
  EndedLease,
  EndpointRateLimit,
  EventRecord,
  FeedEntry,
  FeedPage,
  FeedQuery,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyRecord,
  LeasedDelivery,
  LeaseRequest,
  ListPage,
  PortalExchangeOutcome,
  PortalSessionRecord,
  PublishLease,
  PublishOutcome,
  PurgeOutcome,
  QueueDepth,
  RateWait,
  RequeueOutcome,
  RotateOutcome,
  SignatureScheme,
  Store,
  TestEventOutcome,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
  WebhookSubscription,
  WebhookSubscriptionOutcome,
} from './store/types.js';
export { parseOrThrow, readableText, storableText, validationFailed } from './validation.js';
export type { WebhookKeyType } from './webhooks/signing-secret.js';
export type { LookupAll, ResolvedAddress, UrlPolicy } from './webhooks/url-policy.js';
export type {
  CreateWebhookInput,
  RotateWebhookOptions,
  UpdateWebhookInput,
} from './webhooks/webhook-schemas.js';
export { toWebhookView, type WebhookView, webhookViewSchema } from './webhooks/webhook-view.js';
