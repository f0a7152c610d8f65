import type { Logger } from '../logger.js';
import type { LeasedDelivery, WebhookRecord } from '../store/types.js';
import { toWebhookView, type WebhookView } from '../webhooks/webhook-view.js';
import { messageOf } from './attempt-recording.js';

/** docs/decisions.md §8.20: attempts to one endpoint at once, unless the host says otherwise (at most `concurrency`). */
export const DEFAULT_ENDPOINT_CONCURRENCY = 16;

/** A worker's cap per endpoint: one number for all, or one per endpoint from the host's function. */
export type EndpointConcurrency = number | ((webhook: WebhookView, tenantId: string) => number);

interface Endpoint {
  running: number;
  cap: number;
  /** Leased deliveries waiting for one of its slots, oldest first. */
  waiting: LeasedDelivery[];
}

/**
 * Each endpoint's share of a worker's slots (docs/decisions.md §8.20): at most `cap` attempts to
 * one endpoint run at once, so an endpoint that hangs holds its own slots, never all of them. A
 * delivery leased beyond its endpoint's cap waits here for one of that endpoint's slots, and a
 * claim leaves the endpoints whose slots are all taken or promised (`full`).
 */
export class EndpointSlots {
  private readonly endpoints = new Map<string, Endpoint>();
  /** Endpoints with a free slot and a delivery waiting (their slot freed while every slot of the worker was busy). */
  private readonly ready = new Set<string>();
  private waitingCount = 0;

  constructor(private readonly capOf: (webhook: WebhookRecord) => number) {}

  /** Deliveries waiting for a slot of their endpoint. */
  get waiting(): number {
    return this.waitingCount;
  }

  /** Takes a slot of the delivery's endpoint (true: start it now), or queues it for one (false). */
  take(delivery: LeasedDelivery): boolean {
    const id = delivery.webhook.id;
    let endpoint = this.endpoints.get(id);
    if (endpoint === undefined) {
      endpoint = { running: 0, cap: endpointCap(this.capOf(delivery.webhook)), waiting: [] };
      this.endpoints.set(id, endpoint);
    }
    if (endpoint.running < endpoint.cap && endpoint.waiting.length === 0) {
      endpoint.running++;
      return true;
    }
    endpoint.waiting.push(delivery);
    this.waitingCount++;
    if (endpoint.running < endpoint.cap) this.ready.add(id);
    return false;
  }

  /** An attempt to `webhookId` ended: one of its slots is free. */
  free(webhookId: string): void {
    const endpoint = this.endpoints.get(webhookId)!;
    endpoint.running--;
    if (endpoint.waiting.length > 0) this.ready.add(webhookId);
    else if (endpoint.running === 0) this.endpoints.delete(webhookId);
  }

  /**
   * The longest-waiting delivery whose endpoint has a free slot, that slot taken. One whose lease
   * ends by `startsBy` could no longer finish an attempt inside it: it goes to `late` instead.
   */
  next(startsBy: number, late: (delivery: LeasedDelivery) => void): LeasedDelivery | undefined {
    for (const id of this.ready) {
      const endpoint = this.endpoints.get(id)!;
      while (endpoint.running < endpoint.cap && endpoint.waiting.length > 0) {
        const delivery = endpoint.waiting.shift()!;
        this.waitingCount--;
        if (delivery.delivery.dueAt!.getTime() <= startsBy) {
          late(delivery);
          continue;
        }
        endpoint.running++;
        if (endpoint.running >= endpoint.cap || endpoint.waiting.length === 0) this.ready.delete(id);
        return delivery;
      }
      this.ready.delete(id);
      if (endpoint.running === 0 && endpoint.waiting.length === 0) this.endpoints.delete(id);
    }
    return undefined;
  }

  /** Takes every waiting delivery out (the worker stops): their leases are to be given back. */
  drain(): LeasedDelivery[] {
    const drained: LeasedDelivery[] = [];
    for (const endpoint of this.endpoints.values()) drained.push(...endpoint.waiting.splice(0));
    this.waitingCount = 0;
    this.ready.clear();
    return drained;
  }

  /** Whether the endpoint's slots are all taken or promised: a claim should leave it. */
  isFull(webhookId: string): boolean {
    const endpoint = this.endpoints.get(webhookId);
    return endpoint !== undefined && endpoint.running + endpoint.waiting.length >= endpoint.cap;
  }

  /** Every endpoint whose slots are all taken or promised (LeaseRequest.skipEndpoints). */
  full(): string[] {
    const full: string[] = [];
    for (const [id, endpoint] of this.endpoints) {
      if (endpoint.running + endpoint.waiting.length >= endpoint.cap) full.push(id);
    }
    return full;
  }
}

/** An endpoint's cap as the host gave it: a positive whole number. */
export function endpointCap(value: number): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`endpointConcurrency must be a positive whole number, got ${value}`);
  }
  return value;
}

/**
 * Each endpoint's cap as the worker applies it: the host's number, its function's answer, or
 * DEFAULT_ENDPOINT_CONCURRENCY (at most the worker's slots). A function that throws or answers
 * nonsense gets the default, and the host hears of it.
 */
export function endpointCapOf(
  option: EndpointConcurrency | undefined,
  concurrency: number,
  logger: Logger,
): (webhook: WebhookRecord) => number {
  const fallback = Math.min(DEFAULT_ENDPOINT_CONCURRENCY, concurrency);
  if (option === undefined) return () => fallback;
  if (typeof option === 'number') {
    const cap = endpointCap(option);
    return () => cap;
  }
  return (webhook) => {
    try {
      return endpointCap(option(toWebhookView(webhook), webhook.tenantId));
    } catch (error) {
      logger.error(
        { webhookId: webhook.id, err: messageOf(error) },
        `keyhook: endpointConcurrency failed; the endpoint gets ${fallback}`,
      );
      return fallback;
    }
  };
}
