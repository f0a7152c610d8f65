import type { DeliveryRecord, EventRecord, WebhookStatus } from '../store/types.js';

/**
 * The delivery `publishEvent` writes for one subscribed endpoint (DESIGN.md §6 "Publishing"):
 * pending and due at once for an active endpoint, held since the event for a disabled one.
 * One definition, so every store writes the same record.
 */
export function newDeliveryRecord(
  event: EventRecord,
  webhook: { id: string; status: WebhookStatus },
  id: string,
): DeliveryRecord {
  const held = webhook.status === 'disabled';
  return {
    id,
    tenantId: event.tenantId,
    webhookId: webhook.id,
    eventId: event.id,
    eventType: event.type,
    status: held ? 'held' : 'pending',
    attempts: 0,
    dueAt: held ? null : event.createdAt,
    leaseId: null,
    heldSince: held ? event.createdAt : null,
    lastAttemptAt: null,
    createdAt: event.createdAt,
    updatedAt: event.createdAt,
  };
}
