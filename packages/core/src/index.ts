export { type AdminSession, type AdminSessionOptions, AdminSessionRejected } from './admin/session.js';
export { type AdminTokenOptions, createAdminToken, MAX_ADMIN_TOKEN_SECONDS } from './admin/token.js';
export {
  DEFAULT_EVENTS,
  type DefaultEvents,
  EVENT_TYPE_PATTERN,
  type EventCatalog,
  type EventData,
  type EventDefinition,
  type EventDoc,
  type EventInput,
  type EventMap,
} from './catalog/events.js';
export {
  DEFAULT_SCOPES,
  type DefaultScopes,
  SCOPE_NAME_PATTERN,
  type ScopeDefinition,
  type ScopeInput,
  type ScopeNameOf,
} from './catalog/scopes.js';
export { type Clock, cryptoRandomBytes, type RandomBytes, systemClock } from './clock.js';
export { type EncryptionKeyInput, generateEncryptionKey, SecretBox } from './crypto/secret-box.js';
export { type AttemptResult, type AttemptVerdict, judgeAttempt } from './delivery/outcome.js';
export {
  type AttemptPlan,
  AUTO_DISABLE_AFTER,
  DEFAULT_HELD_RETENTION_MS,
  heldTooLong,
  planAfterAttempt,
  shouldAutoDisable,
} from './delivery/plan.js';
export {
  EVENT_ID_PATTERN,
  Events,
  MAX_EVENT_BYTES,
  type PublishedEvent,
  type PublishInput,
  type PublishOptions,
} from './delivery/publish.js';
export { leasedSubscribers, newDeliveryRecord } from './delivery/records.js';
export {
  DEFAULT_RETRY_SCHEDULE_MS,
  MAX_RETRY_AFTER_MS,
  maxAttempts,
  nextAttemptAt,
  parseRetryAfter,
  RETRY_JITTER,
  type RetryPlan,
} from './delivery/schedule.js';
export {
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  MAX_LOGGED_RESPONSE_BYTES,
  type SendOutcome,
  type SendRequest,
  WebhookSender,
} from './delivery/sender.js';
export { Deliveries } from './delivery/service.js';
export {
  type DeliveryHeaderNames,
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  SPEC_HEADER_NAMES,
  signatureHeader,
} from './delivery/signature.js';
export {
  assertTransition,
  canTransition,
  DELIVERY_STATES,
  DELIVERY_TRANSITIONS,
  type DeliveryState,
  TERMINAL_STATES,
} from './delivery/states.js';
export {
  type AttemptView,
  type DeliveryView,
  toAttemptView,
  toDeliveryDetailView,
  toDeliveryView,
} from './delivery/view.js';
export {
  DEFAULT_CONCURRENCY,
  DEFAULT_POLL_INTERVAL_MS,
  DeliveryWorker,
  type DeliveryWorkerOptions,
} from './delivery/worker.js';
export {
  ERROR_STATUS,
  type ErrorCode,
  type ErrorDetail,
  isKeyhookError,
  KeyhookError,
  type KeyhookErrorOptions,
} from './errors.js';
export type { ApiKeyContext, GuardResult } from './http/handler.js';
export { bearerToken, header } from './http/headers.js';
export { type ApiOperation, type ApiWebhooks, type OpenApiInfo, openApiDocument } from './http/openapi.js';
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
export { DEFAULT_IDEMPOTENCY_RETENTION_MS, IDEMPOTENCY_LOCK_MS } from './idempotency/service.js';
export { type IdPrefix, isWellFormedId, newId } from './ids.js';
export {
  createKeyhook,
  DEFAULT_ADMIN_BODY_LIMIT,
  DEFAULT_PREFIX,
  type DeliveryOptions,
  type EventMapOf,
  type EventsOf,
  type Keyhook,
  type KeyhookOptions,
  type ScopeOf,
} from './keyhook.js';
export { API_KEY_PATTERN, KEY_PREFIX, mintApiKey, type ParsedApiKey, parseApiKey } from './keys/format.js';
export { digestsEqual, hashApiKey } from './keys/hash.js';
export { LAST_USED_INTERVAL_MS } from './keys/last-used.js';
export { apiKeySchemaFor, type CreateApiKeyInput, createApiKeySchema } from './keys/schemas.js';
export { ApiKeys, type IssuedApiKey } from './keys/service.js';
export { type ApiKeyView, type ApiKeyViewStatus, toApiKeyView } from './keys/view.js';
export { consoleLogger, type Logger, silentLogger } from './logger.js';
export { isScope, OPERATION_SCOPES, type Operation, SCOPES, type Scope, scopeFor } from './scopes.js';
export { MemoryStore } from './store/memory.js';
export type {
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
export { parseOrThrow, validationFailed } from './validation.js';
export { EVENT_TYPES, type EventType, isEventType } from './webhooks/events.js';
export {
  type CreateWebhookInput,
  createWebhookSchema,
  type UpdateWebhookInput,
  webhookSchemaFor,
} from './webhooks/schemas.js';
export { mintWebhookSecret, WEBHOOK_SECRET_PREFIX } from './webhooks/secret.js';
export { type IssuedWebhook, twinKeyOf, Webhooks } from './webhooks/service.js';
export {
  checkWebhookUrl,
  isPublicAddress,
  type LookupAll,
  MAX_WEBHOOK_URL_LENGTH,
  type ResolvedAddress,
  resolveCheckedAddresses,
  type UrlCheck,
  type UrlPolicy,
  UrlPolicyError,
} from './webhooks/url-policy.js';
export { toWebhookView, type WebhookView } from './webhooks/view.js';
