/**
 * `@keyhook/core/store`: the Store contract and what every store builds on, so that all stores
 * write the same records. Stores import from here; host apps never need to (the root entry has
 * what they use). See the README's "What the package exports".
 */

export { leasedSubscribers, newDeliveryRecord } from './delivery/records.js';
export type { DeliveryState } from './delivery/states.js';
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
export { twinKeyOf } from './webhooks/service.js';

// Migrations: what every store's runner shares (the option, the types, the checks and messages,
// the log lines around each migration).

export {
  type AppliedMigration,
  applyLogged,
  assertKnownMigrations,
  type KnownMigrationsOptions,
  type LoggedMigration,
  type MigrationsMode,
  migrationsMode,
  type PendingMigration,
  type PendingMigrationsErrorOptions,
  pendingMigrationsError,
} from './store/migrations.js';
