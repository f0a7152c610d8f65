/**
 * `@keyhook/core/store`: the Store contract and what every store builds on, so that all stores
 * write the same records. Stores import from here; host apps never need to (the root entry has
 * what they use). See the README's "What the package exports".
 */

export { leasedSubscribers, newDeliveryRecord, type QueuePlace, queuedOn } from './delivery/records.js';
export {
  type AutoDisableRule,
  autoDisables,
  DELIVERY_RULES,
  type DeliveryRules,
  type HoldRule,
  holdsDeliveries,
} from './delivery/rules.js';
export { canTransition, DELIVERY_TRANSITIONS, type DeliveryState } from './delivery/states.js';
export {
  ERROR_STATUS,
  type ErrorCode,
  type ErrorDetail,
  isKeyhookError,
  KeyhookError,
  type KeyhookErrorOptions,
} from './errors.js';
export type { RateLimit } from './keys/rate-limit.js';
export { consoleLogger, type Logger, silentLogger } from './logger.js';
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
export { claimsTwinKey, twinClaimOf, twinKeyOf } from './webhooks/service.js';

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
