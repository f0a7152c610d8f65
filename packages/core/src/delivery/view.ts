import type { AttemptRecord, DeliveryDetail, DeliveryRecord } from '../store/types.js';
import type { DeliveryState } from './states.js';

/** The admin view of a delivery (DESIGN.md §2). Lease ids are internal and never shown. */
export interface DeliveryView {
  id: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  status: DeliveryState;
  /** Attempts made so far; GET of one delivery lists them. */
  attemptCount: number;
  /** When the next attempt is due (pending, retry_scheduled); null otherwise. */
  nextAttemptAt: string | null;
  heldSince: string | null;
  lastAttemptAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface AttemptView {
  attempt: number;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  /** At most 4 KiB of what the receiver answered. */
  responseBody: string | null;
}

const iso = (value: Date | null) => (value ? value.toISOString() : null);

export function toDeliveryView(delivery: DeliveryRecord): DeliveryView {
  return {
    id: delivery.id,
    webhookId: delivery.webhookId,
    eventId: delivery.eventId,
    eventType: delivery.eventType,
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

/** One delivery, the event it carries (the body as sent, parsed) and every attempt, oldest first. */
export function toDeliveryDetailView({ delivery, event, attempts }: DeliveryDetail) {
  return {
    delivery: toDeliveryView(delivery),
    event: JSON.parse(event.payload) as unknown,
    attempts: attempts.map(toAttemptView),
  };
}
