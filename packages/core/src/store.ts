/**
 * `@keyhook/core/store`: what a store is held to and what it may build on. Stores import from
 * here; host apps never need to (the root entry has what they use). See the README's "Writing a
 * store" section.
 */

export { type Clock, cryptoRandomBytes, type RandomBytes, systemClock } from './clock.js';
export {
  AUTO_DISABLE_AFTER,
  DEFAULT_HELD_RETENTION_MS,
  heldTooLong,
  shouldAutoDisable,
} from './delivery/plan.js';
export { leasedSubscribers, newDeliveryRecord } from './delivery/records.js';
export {
  canTransition,
  DELIVERY_STATES,
  DELIVERY_TRANSITIONS,
  type DeliveryState,
  TERMINAL_STATES,
} from './delivery/states.js';
export {
  ERROR_STATUS,
  type ErrorCode,
  type ErrorDetail,
  isKeyhookError,
  KeyhookError,
  type KeyhookErrorOptions,
} from './errors.js';
export { type IdPrefix, newId } from './ids.js';
export { consoleLogger, type Logger, silentLogger } from './logger.js';
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
export { twinKeyOf } from './webhooks/service.js';
