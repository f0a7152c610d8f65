import type { Clock } from '../clock.js';
import { KeyhookError } from '../errors.js';
import { isWellFormedId } from '../ids.js';
import type { Deliveries } from '../services.js';
import type { DeliveryDetail, DeliveryRecord, Store } from '../store/types.js';
import { validationFailed } from '../validation.js';
import { DELIVERY_STATES, type DeliveryState } from './states.js';

/** A manual retry queues a failed delivery again (DESIGN.md §2); the state table allows no other. */
const RETRYABLE: readonly DeliveryState[] = ['failed'];

const notFound = () => new KeyhookError('not_found', 'No delivery with that id.');

export interface DeliveriesDeps {
  store: Store;
  clock: Clock;
  /** Called after a retry queued a delivery, so workers in this process send it at once. */
  onQueued(): void;
}

/** The admin rules of deliveries: list, read with attempts, retry. */
export class DeliveryService implements Deliveries {
  constructor(private readonly deps: DeliveriesDeps) {}

  async list(
    tenantId: string,
    webhookId: string,
    limit: number,
    before: string | undefined,
    status: string | null,
  ): Promise<DeliveryRecord[]> {
    if (status !== null && !(DELIVERY_STATES as readonly string[]).includes(status)) {
      throw validationFailed([{ path: 'status', message: `must be one of ${DELIVERY_STATES.join(', ')}` }]);
    }
    // Another tenant's webhook, or none: 404, never an empty list that confirms nothing.
    if (!isWellFormedId(webhookId, 'wh') || !(await this.deps.store.getWebhook(tenantId, webhookId))) {
      throw new KeyhookError('not_found', 'No webhook with that id.');
    }
    return this.deps.store.listDeliveries(tenantId, webhookId, {
      limit,
      before,
      status: (status ?? undefined) as DeliveryState | undefined,
    });
  }

  async get(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail> {
    const found = wellFormed(webhookId, deliveryId)
      ? await this.deps.store.getDelivery(tenantId, webhookId, deliveryId)
      : null;
    if (!found) throw notFound();
    return found;
  }

  /** Queues a failed delivery again, due now; held instead while its endpoint is disabled. */
  async retry(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryRecord> {
    if (!wellFormed(webhookId, deliveryId)) throw notFound();
    const outcome = await this.deps.store.requeueDelivery(
      tenantId,
      webhookId,
      deliveryId,
      RETRYABLE,
      this.deps.clock.now(),
    );
    if (outcome.outcome === 'not_found') throw notFound();
    if (outcome.outcome === 'wrong_state') {
      throw new KeyhookError(
        'delivery_not_retryable',
        `Only a failed delivery can be retried; this one is ${outcome.delivery.status}.`,
      );
    }
    this.deps.onQueued();
    return outcome.delivery;
  }
}

const wellFormed = (webhookId: string, deliveryId: string) =>
  isWellFormedId(webhookId, 'wh') && isWellFormedId(deliveryId, 'dlv');
