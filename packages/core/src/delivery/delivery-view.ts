import { z } from 'zod';
import type { AttemptRecord, DeliveryDetail, DeliveryRecord } from '../store/types.js';
import { DELIVERY_STATUSES } from './states.js';
import { isTestEventId } from './test-marker.js';

const instant = z.iso.datetime();

/**
 * The admin view of a delivery, as the OpenAPI document describes it. Lease ids
 * are internal and never shown. `toDeliveryView` is typed by it.
 */
export const deliveryViewSchema = z.object({
  id: z.string(),
  webhookId: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  test: z.boolean().meta({
    description: 'A test event’s delivery (POST /admin/webhooks/{id}/test): its event id begins evt_test_.',
  }),
  status: z.enum(DELIVERY_STATUSES),
  attemptCount: z
    .number()
    .int()
    .meta({ description: 'Attempts made so far; GET of one delivery lists them.' }),
  nextAttemptAt: instant
    .nullable()
    .meta({ description: 'When the next attempt is due (pending, retry_scheduled); null otherwise.' }),
  heldSince: instant.nullable(),
  lastAttemptAt: instant.nullable(),
  createdAt: instant,
  updatedAt: instant,
});

export type DeliveryView = z.output<typeof deliveryViewSchema>;

export const attemptViewSchema = z.object({
  attempt: z.number().int(),
  startedAt: instant,
  durationMs: z.number().int(),
  statusCode: z.number().int().nullable(),
  error: z.string().nullable(),
  responseBody: z.string().nullable().meta({ description: 'At most 4 KiB of what the receiver answered.' }),
});

export type AttemptView = z.output<typeof attemptViewSchema>;

/** One delivery, the event it carries (the body as sent, parsed) and every attempt, oldest first. */
export const deliveryDetailViewSchema = z.object({
  delivery: deliveryViewSchema,
  event: z.object({
    id: z.string(),
    type: z.string(),
    createdAt: instant,
    data: z.record(z.string(), z.unknown()),
  }),
  attempts: z.array(attemptViewSchema),
});

const iso = (value: Date | null) => (value ? value.toISOString() : null);

/** A delivery with its event and attempts, as `GET …/deliveries/{id}` answers it. */
export type DeliveryDetailView = z.output<typeof deliveryDetailViewSchema>;

/** A delivery as the admin endpoints list it. */
export function toDeliveryView(delivery: DeliveryRecord): DeliveryView {
  return {
    id: delivery.id,
    webhookId: delivery.webhookId,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
    test: isTestEventId(delivery.eventId),
    status: delivery.status,
    attemptCount: delivery.attempts,
    // In flight, dueAt is the lease's end: not an attempt anyone should wait for.
    nextAttemptAt: delivery.status === 'in_flight' ? null : iso(delivery.dueAt),
    heldSince: iso(delivery.heldSince),
    lastAttemptAt: iso(delivery.lastAttemptAt),
    createdAt: delivery.createdAt.toISOString(),
    updatedAt: delivery.updatedAt.toISOString(),
  };
}

/** One attempt as the delivery's detail shows it. */
export function toAttemptView(attempt: AttemptRecord): AttemptView {
  return {
    attempt: attempt.attempt,
    startedAt: attempt.startedAt.toISOString(),
    durationMs: attempt.durationMs,
    statusCode: attempt.statusCode,
    error: attempt.error,
    responseBody: attempt.responseBody,
  };
}

/** A delivery with its event and attempts, as `keyhook.deliveries.get` returns it, for a response. */
export function toDeliveryDetailView({ delivery, event, attempts }: DeliveryDetail): DeliveryDetailView {
  return {
    delivery: toDeliveryView(delivery),
    event: JSON.parse(event.payload),
    attempts: attempts.map(toAttemptView),
  };
}
