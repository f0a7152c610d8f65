import type {
  DeliveryRate,
  DeliveryRecord,
  EventRecord,
  PublishLease,
  WebhookStatus,
} from '../store/types.js';
import { DELIVERY_RULES, holdsDeliveries } from './rules.js';
import type { DeliveryStatus } from './states.js';

/**
 * The delivery `publishEvent` writes for one subscribed endpoint (docs/decisions.md §8.1):
 * pending and due at once for an active endpoint, held since the event for a disabled one, or,
 * when the publish takes a lease for it, in flight under that lease until createdAt + leaseMs.
 * One definition, so every store writes the same record.
 */
export function newDeliveryRecord(
  event: EventRecord,
  webhook: { id: string; status: WebhookStatus },
  id: string,
  lease?: Pick<PublishLease, 'leaseId' | 'leaseMs'>,
): DeliveryRecord {
  const held = holdsDeliveries(webhook.status);
  const leased = !held && lease !== undefined;
  return {
    id,
    tenantId: event.tenantId,
    webhookId: webhook.id,
    eventId: event.id,
    eventType: event.type,
    status: held ? DELIVERY_RULES.hold.state : leased ? 'in_flight' : 'pending',
    attempts: 0,
    dueAt: held ? null : leased ? new Date(event.createdAt.getTime() + lease.leaseMs) : event.createdAt,
    leaseId: leased ? lease.leaseId : null,
    heldSince: held ? event.createdAt : null,
    lastAttemptAt: null,
    createdAt: event.createdAt,
    updatedAt: event.createdAt,
  };
}

/**
 * Which subscribers' deliveries a publish leases: the first `lease.limit` active ones without a
 * `deliveryRate`, in the order given (webhook id). A limited endpoint's delivery is written
 * pending, and its rate is applied when a worker claims it (docs/decisions.md §8.18). One rule
 * for every store.
 */
export function leasedSubscribers<
  T extends { status: WebhookStatus; deliveryRate?: DeliveryRate | null | undefined },
>(subscribers: readonly T[], lease: Pick<PublishLease, 'limit'> | undefined): Set<T> {
  const chosen = new Set<T>();
  if (lease === undefined) return chosen;
  for (const subscriber of subscribers) {
    if (chosen.size >= lease.limit) break;
    if (!holdsDeliveries(subscriber.status) && !subscriber.deliveryRate) chosen.add(subscriber);
  }
  return chosen;
}

/** Where a queued delivery waits: its state, when it is due, and since when it is held. */
export type QueuePlace = Pick<DeliveryRecord, 'status' | 'dueAt' | 'heldSince'>;

/**
 * Where a delivery queued as `state` for `dueAt` waits on an endpoint with status
 * `endpointStatus`, decided at `at` (docs/decisions.md §10.2): as asked, or held since `at` when
 * the endpoint holds its deliveries. A retry (retry_scheduled), a manual retry and a recovery
 * (pending, due at once) all go through it; stores call it with the status they read under the
 * lock that disabling takes.
 */
export function queuedOn(
  endpointStatus: WebhookStatus,
  state: Extract<DeliveryStatus, 'pending' | 'retry_scheduled'>,
  dueAt: Date | null,
  at: Date,
): QueuePlace {
  return holdsDeliveries(endpointStatus)
    ? { status: DELIVERY_RULES.hold.state, dueAt: null, heldSince: at }
    : { status: state, dueAt, heldSince: null };
}
