import type { DeliveryRecord, EventRecord, PublishLease, WebhookStatus } from '../store/types.js';

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
  const held = webhook.status === 'disabled';
  const leased = !held && lease !== undefined;
  return {
    id,
    tenantId: event.tenantId,
    webhookId: webhook.id,
    eventId: event.id,
    eventType: event.type,
    status: held ? 'held' : leased ? 'in_flight' : 'pending',
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
 * Which subscribers' deliveries a publish leases: the first `lease.limit` active ones, in the
 * order given (webhook id). One rule for every store.
 */
export function leasedSubscribers<T extends { status: WebhookStatus }>(
  subscribers: readonly T[],
  lease: Pick<PublishLease, 'limit'> | undefined,
): Set<T> {
  const chosen = new Set<T>();
  if (lease === undefined) return chosen;
  for (const subscriber of subscribers) {
    if (chosen.size >= lease.limit) break;
    if (subscriber.status === 'active') chosen.add(subscriber);
  }
  return chosen;
}
