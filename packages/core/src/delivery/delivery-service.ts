import { z } from 'zod';
import type { Clock } from '../clock.js';
import { KeyhookError } from '../errors.js';
import { isWellFormedId } from '../ids.js';
import type { Deliveries } from '../service-interfaces.js';
import type { DeliveryDetail, DeliveryListPage, DeliveryRecord, Store } from '../store/types.js';
import { parseOrThrow, validationFailed } from '../validation.js';
import { ADMIN_RETRYABLE_STATES, DELIVERY_STATUSES, type DeliveryStatus } from './states.js';

/**
 * A manual retry queues a failed delivery again (docs/decisions.md §11.1); the state table allows
 * no other.
 */

const notFound = () => new KeyhookError('not_found', 'No delivery with that id.');

export interface DeliveriesDeps {
  store: Store;
  clock: Clock;
  /** Called after a retry or a recovery queued deliveries, so workers in this process send them at once. */
  onQueued(): void;
  /** Finished deliveries are deleted this long after they finished: recovery reaches no further back. */
  retentionMs: number;
}

/** Deliveries a recovery queues per store call, between which the event loop turns. */
export const RECOVERY_BATCH = 500;

/** `POST /admin/webhooks/{id}/recover`: the window of failed deliveries to queue again. */
export const recoverSchema = z
  .object({
    since: z.iso
      .datetime({ offset: true })
      .meta({ description: 'Failed deliveries of events published at or after this time are queued again.' }),
    until: z.iso
      .datetime({ offset: true })
      .optional()
      .meta({ description: 'And before this time. Default: now (this instant included).' }),
  })
  .strict();

export interface RecoverInput {
  /** ISO 8601 with an offset: the window's start, inclusive. */
  since: string;
  /** ISO 8601 with an offset: the window's end, exclusive. Default now. */
  until?: string | undefined;
}

/**
 * What narrows an endpoint's delivery log (docs/http-api.md §4.4), as the query gives it or as host
 * code does. Each field left out, or null, narrows nothing.
 */
export interface DeliveryListFilter {
  /** One delivery state. */
  status?: string | null | undefined;
  /** The event's type. */
  type?: string | null | undefined;
  /** The event's id (`evt_…`, or the host's own). */
  eventId?: string | null | undefined;
  /** Deliveries created (their event published) at or after: RFC 3339, or a Date. */
  since?: string | Date | null | undefined;
  /** And before: RFC 3339, or a Date. */
  until?: string | Date | null | undefined;
}

const instantSchema = z.iso.datetime({ offset: true });

/** A filter's store form; `validation_failed` naming each field that is not valid. */
function narrowing(filter: DeliveryListFilter): Omit<DeliveryListPage, 'limit' | 'before'> {
  const problems: { path: string; message: string }[] = [];
  const { status, type, eventId } = filter;
  if (status != null && !(DELIVERY_STATUSES as readonly string[]).includes(status)) {
    problems.push({ path: 'status', message: `must be one of ${DELIVERY_STATUSES.join(', ')}` });
  }
  for (const [path, value] of [
    ['type', type],
    ['eventId', eventId],
  ] as const) {
    if (value != null && (value.length === 0 || value.length > 255)) {
      problems.push({ path, message: 'must be 1 to 255 characters' });
    }
  }
  const instant = (path: 'since' | 'until', value: string | Date | null | undefined) => {
    if (value == null) return undefined;
    const at =
      value instanceof Date ? value : instantSchema.safeParse(value).success ? new Date(value) : null;
    if (at === null || Number.isNaN(at.getTime())) {
      problems.push({ path, message: 'must be an RFC 3339 time with an offset, as 2026-12-06T12:00:00Z' });
      return undefined;
    }
    return at;
  };
  const createdFrom = instant('since', filter.since);
  const createdBefore = instant('until', filter.until);
  if (createdFrom && createdBefore && createdFrom.getTime() >= createdBefore.getTime()) {
    problems.push({ path: 'until', message: 'must be after since' });
  }
  if (problems.length > 0) throw validationFailed(problems);
  return {
    status: (status ?? undefined) as DeliveryStatus | undefined,
    eventType: type ?? undefined,
    eventId: eventId ?? undefined,
    createdFrom,
    createdBefore,
  };
}

/** The admin rules of deliveries: list, read with attempts, retry. */
export class DeliveryService implements Deliveries {
  constructor(private readonly deps: DeliveriesDeps) {}

  async list(
    tenantId: string,
    webhookId: string,
    limit: number,
    before: string | undefined,
    filter: DeliveryListFilter | string | null = null,
  ): Promise<DeliveryRecord[]> {
    const narrowed = narrowing(typeof filter === 'string' || filter === null ? { status: filter } : filter);
    // Another tenant's webhook, or none: 404, never an empty list that confirms nothing.
    if (!isWellFormedId(webhookId, 'wh') || !(await this.deps.store.getWebhook(tenantId, webhookId))) {
      throw new KeyhookError('not_found', 'No webhook with that id.');
    }
    return this.deps.store.listDeliveries(tenantId, webhookId, { limit, before, ...narrowed });
  }

  async get(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail> {
    const found = wellFormed(webhookId, deliveryId)
      ? await this.deps.store.getDelivery(tenantId, webhookId, deliveryId)
      : null;
    if (!found) throw notFound();
    return found;
  }

  /**
   * Queues a delivery again, due now (held instead while its endpoint is disabled): a failed one,
   * a succeeded one (a resend: a new attempt with the same event id), or one waiting for its next
   * retry (brought forward). Its attempts are kept and counted.
   */
  async retry(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryRecord> {
    if (!wellFormed(webhookId, deliveryId)) throw notFound();
    const outcome = await this.deps.store.requeueDelivery(
      tenantId,
      webhookId,
      deliveryId,
      ADMIN_RETRYABLE_STATES,
      this.deps.clock.now(),
    );
    if (outcome.outcome === 'not_found') throw notFound();
    if (outcome.outcome === 'wrong_state') {
      throw new KeyhookError(
        'delivery_not_retryable',
        `Only a failed, succeeded or retry_scheduled delivery can be retried; this one is ${outcome.delivery.status}.`,
      );
    }
    this.deps.onQueued();
    return outcome.delivery;
  }

  /**
   * Queues again every failed delivery of the endpoint whose event was published in the
   * window, as a retry does each (due now; held while the endpoint is disabled; each keeps its
   * event id). Works in batches of RECOVERY_BATCH with a turn of the event loop between them.
   * Returns how many it queued; a delivery already queued again is not failed, so recovering
   * twice never sends one twice.
   */
  async recover(tenantId: string, webhookId: string, input: RecoverInput): Promise<number> {
    const parsed = parseOrThrow(recoverSchema, input);
    const now = this.deps.clock.now();
    const since = new Date(parsed.since);
    // Without `until`, everything up to now, this millisecond included.
    const until = parsed.until === undefined ? new Date(now.getTime() + 1) : new Date(parsed.until);
    if (until.getTime() <= since.getTime()) {
      throw validationFailed([
        parsed.until === undefined
          ? { path: 'since', message: 'must not be in the future' }
          : { path: 'until', message: 'must be later than since' },
      ]);
    }
    const oldest = now.getTime() - this.deps.retentionMs;
    if (since.getTime() < oldest) {
      throw validationFailed([
        {
          path: 'since',
          message: `must be within the retention (${Math.round(this.deps.retentionMs / 1000)} s): finished deliveries before ${new Date(oldest).toISOString()} are deleted`,
        },
      ]);
    }
    if (!isWellFormedId(webhookId, 'wh') || !(await this.deps.store.getWebhook(tenantId, webhookId))) {
      throw new KeyhookError('not_found', 'No webhook with that id.');
    }
    let queued = 0;
    for (;;) {
      const batch = await this.deps.store.recoverFailedDeliveries(
        tenantId,
        webhookId,
        since,
        until,
        this.deps.clock.now(),
        RECOVERY_BATCH,
        // Failed by the time this recovery began: one that a batch queued and fails again comes back once only.
        new Date(now.getTime() + 1),
      );
      queued += batch;
      if (batch > 0) this.deps.onQueued();
      if (batch < RECOVERY_BATCH) return queued;
      await nextTurn();
    }
  }
}

/** The event loop's turn between two recovery batches. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

const wellFormed = (webhookId: string, deliveryId: string) =>
  isWellFormedId(webhookId, 'wh') && isWellFormedId(deliveryId, 'dlv');
