/**
 * `@keyhook/core/store`: the Store contract and what every store builds on, so that all stores
 * write the same records and apply the same rules. Stores import from here and nothing else of
 * keyhook's; a host imports from here only to name the records its services return (`WebhookRecord`,
 * `DeliveryRate`, …) or the `Store` it passes. Each name is a promise
 * listed in `etc/core-store.api.md`; see core's README, "What the package exports".
 */

// The rules a store applies as core hands them over, never re-derived (docs/decisions.md §10.4).

export {
  ENDPOINT_RATE_RULE,
  type EndpointRateRule,
  paceEndpoint,
  type RateDecision,
  type RateSlots,
  rateWaitOf,
} from './delivery/endpoint-rate.js';
export { leasedSubscribers, newDeliveryRecord, type QueuePlace, queuedOn } from './delivery/records.js';
export {
  type AutoDisableRule,
  autoDisables,
  DELIVERY_RULES,
  type DeliveryRules,
  type HoldRule,
  holdsDeliveries,
} from './delivery/rules.js';
export { canTransition, type DeliveryStatus } from './delivery/states.js';
// An unreachable database becomes `unavailable` (503, Retry-After) through this one function, so
// a store needs none of the error surface a host uses (docs/decisions.md §1.9).
export { unavailableError } from './errors.js';
// The Store contract's types (the root entry exports them too: `KeyhookOptions.store` names it).
export type { RateLimit } from './keys/rate-limit.js';
// A store's default logger (`consoleLogger`) and its migrate()'s (`silentLogger`): the one pair of
// values the root entry exports too, since a host passes the same loggers to keyhook and its store.
export { consoleLogger, type Logger, silentLogger } from './logger.js';
export { type PortalLinkRefusal, portalLinkRefusal } from './portal/link-refusal.js';
export { OPTIONAL_CAPABILITIES, type OptionalCapability } from './store/capabilities.js';
export type {
  ApiKeyChanges,
  ApiKeyRecord,
  ApiKeyStatus,
  AttemptCompletion,
  AttemptCompletionOutcome,
  AttemptCounts,
  AttemptRecord,
  CompleteStore,
  DeliveryDetail,
  DeliveryListPage,
  DeliveryQueueStore,
  DeliveryRate,
  DeliveryRecord,
  EndedLease,
  EndpointRateLimit,
  EndpointStore,
  EventFeedStore,
  EventRecord,
  FeedEntry,
  FeedPage,
  FeedQuery,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyRecord,
  IdempotencyStore,
  KeyStore,
  LeasedDelivery,
  LeaseRequest,
  ListPage,
  PortalExchangeOutcome,
  PortalSessionRecord,
  PortalSessionStore,
  PublishLease,
  PublishOutcome,
  PurgeOutcome,
  QueueDepth,
  RateWait,
  RequeueOutcome,
  RetentionStore,
  RotateOutcome,
  SignatureScheme,
  Store,
  StoreConnection,
  TestEventOutcome,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
  WebhookSubscription,
  WebhookSubscriptionOutcome,
} from './store/types.js';
export { claimsTwinKey, twinClaimOf, twinKeyOf } from './webhooks/webhook-service.js';

// Migrations: the one runner every store (and an app's own tables) uses. Its rules live here:
// file names and order, checksums, what is refused; a driver only executes.

export {
  type AppliedMigration,
  type MigrationDriver,
  type MigrationFile,
  type MigrationsMode,
  type MigrationTarget,
  migrationChecksum,
  migrationsMode,
  type PendingMigration,
  type PendingMigrationsErrorOptions,
  pendingMigrationFiles,
  pendingMigrationsError,
  type RecordedMigration,
  readMigrationFiles,
  runMigrations,
} from './store/migrations.js';
