/**
 * `@keyhook/core`: what a host app uses, at most 90 names (`scripts/check-budgets.mjs`). Each is
 * a semver promise, listed in `etc/core.api.md`. The entries by audience (core's README, "What
 * the package exports"):
 * - `@keyhook/core` (this file), for hosts: createKeyhook and its options, the services and
 *   their inputs, the views a client is answered with, the errors, the catalog types, the
 *   loggers and the in-memory store.
 * - `@keyhook/core/http` (src/for-http.ts), for adapters and a host's own routes: the request
 *   and response core speaks, the guard's result, the lingering close, the OpenAPI document and
 *   route, and what a route uses to answer as keyhook's do.
 * - `@keyhook/core/store` (src/for-stores.ts), for store authors: the Store contract, its
 *   records, and the rules a store applies.
 * No value is exported by two entries but the two loggers.
 */

export type { AdminSessionOptions } from './admin/session.js';
export { type AdminTokenOptions, createAdminToken } from './admin/token.js';
export type {
  EventCatalog,
  EventCatalogEntry,
  EventData,
  EventDefinition,
  EventInput,
  EventMap,
} from './catalog/events.js';
export type { ScopeDefinition, ScopeInput, ScopeNameOf } from './catalog/scopes.js';
export type { Clock, RandomBytes, TimerHandle, TimerOptions, Timers } from './clock.js';
export { type EncryptionKeyInput, generateEncryptionKey } from './crypto/secret-box.js';
export type { DeliveryListFilter, RecoverInput } from './delivery/delivery-service.js';
export {
  type AttemptView,
  type DeliveryDetailView,
  type DeliveryView,
  toDeliveryDetailView,
  toDeliveryView,
} from './delivery/delivery-view.js';
export type { EndpointConcurrency } from './delivery/endpoint-slots.js';
export type { EventsFeedOption, FeedEventView, FeedPageView } from './delivery/event-feed.js';
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
export {
  createKeyhook,
  type DeliveryOptions,
  type EventCatalogOf,
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
export { type ApiKeyView, type ApiKeyViewStatus, toApiKeyView } from './keys/key-view.js';
export type { RateLimit, RateLimitOptions } from './keys/rate-limit.js';
export { consoleLogger, type Logger, silentLogger } from './logger.js';
export {
  type CreatePortalSessionInput,
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
export type { WebhookKeyType } from './webhooks/signing-secret.js';
export type { LookupAll, ResolvedAddress, UrlPolicy } from './webhooks/url-policy.js';
export type {
  CreateWebhookInput,
  RotateWebhookOptions,
  UpdateWebhookInput,
} from './webhooks/webhook-schemas.js';
export { toWebhookView, type WebhookView } from './webhooks/webhook-view.js';
