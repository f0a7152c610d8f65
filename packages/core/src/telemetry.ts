import {
  type Counter,
  type Histogram,
  type MeterProvider,
  metrics,
  type ObservableGauge,
  type ObservableResult,
} from '@opentelemetry/api';
import type { DeliveryStatus } from './delivery/states.js';
import type { Logger } from './logger.js';
import type { QueueDepth } from './store/types.js';

/** What a delivery attempt came to, as `keyhook.deliveries` counts it. */
export type DeliveryOutcome = 'succeeded' | 'retry' | 'failed' | 'held';

const OUTCOMES: Partial<Record<DeliveryStatus, DeliveryOutcome>> = {
  succeeded: 'succeeded',
  retry_scheduled: 'retry',
  failed: 'failed',
  held: 'held',
};

/** A recorded attempt's new state, as the metrics and spans name the outcome; undefined for others. */
export function deliveryOutcome(state: DeliveryStatus): DeliveryOutcome | undefined {
  return OUTCOMES[state];
}

/** `keyhook.deliveries.queued`'s `keyhook.delivery.state`, per field of QueueDepth. */
const QUEUE_STATES: Record<keyof QueueDepth, string> = {
  due: 'due',
  scheduled: 'scheduled',
  inFlight: 'in_flight',
  held: 'held',
};

/**
 * keyhook's metrics, through `@opentelemetry/api` only: no-ops until the host registers a
 * meter provider (before `createKeyhook`, or passed as `telemetry.meterProvider`). Names follow
 * OpenTelemetry's semantic conventions where one exists, `keyhook.*` otherwise; units are UCUM.
 * core's README lists them.
 */
export class KeyhookMetrics {
  private readonly deliveries: Counter;
  private readonly attemptDuration: Histogram;
  private readonly lag: Histogram;
  private readonly auth: Counter;
  private readonly rateLimited: Counter;
  private readonly disabled: Counter;
  private readonly queued: ObservableGauge;

  constructor(provider: MeterProvider = metrics.getMeterProvider()) {
    const meter = provider.getMeter('@keyhook/core');
    this.queued = meter.createObservableGauge('keyhook.deliveries.queued', {
      description:
        'Deliveries waiting, across every tenant of the store: due, scheduled (a retry waiting for its time), in_flight, held.',
      unit: '{delivery}',
    });
    this.deliveries = meter.createCounter('keyhook.deliveries', {
      description:
        'Delivery attempts by what they came to: succeeded, retry (scheduled), failed (for good), held.',
      unit: '{delivery}',
    });
    this.attemptDuration = meter.createHistogram('http.client.request.duration', {
      description: 'One delivery attempt, connect to answer.',
      unit: 's',
    });
    this.lag = meter.createHistogram('keyhook.delivery.lag', {
      description: 'From publish to the successful attempt.',
      unit: 's',
    });
    this.auth = meter.createCounter('keyhook.auth.outcomes', {
      description: 'API-key verifications on the data plane, by outcome: ok, or the error code.',
      unit: '{request}',
    });
    this.rateLimited = meter.createCounter('keyhook.rate_limit.refusals', {
      description:
        "Requests refused with 429: a key's limit (key), or an address's failed verifications (address).",
      unit: '{request}',
    });
    this.disabled = meter.createCounter('keyhook.endpoints.disabled', {
      description: 'Endpoints disabled after consecutive permanent failures.',
      unit: '{endpoint}',
    });
  }

  /** One recorded attempt: its outcome, its duration, and (a success) the lag since publish. */
  attempt(
    outcome: DeliveryOutcome,
    durationMs: number,
    statusCode: number | null,
    lagMs: number | null,
  ): void {
    this.deliveries.add(1, { 'keyhook.delivery.outcome': outcome });
    this.attemptDuration.record(
      durationMs / 1000,
      statusCode === null
        ? { 'http.request.method': 'POST', 'error.type': 'connection' }
        : { 'http.request.method': 'POST', 'http.response.status_code': statusCode },
    );
    if (lagMs !== null) this.lag.record(Math.max(0, lagMs) / 1000);
  }

  authOutcome(outcome: string): void {
    this.auth.add(1, { 'keyhook.auth.outcome': outcome });
  }

  rateLimitRefusal(reason: 'key' | 'address'): void {
    this.rateLimited.add(1, { 'keyhook.rate_limit.reason': reason });
  }

  endpointDisabled(): void {
    this.disabled.add(1);
  }

  /**
   * Reports the queue depth on each collection (a Prometheus scrape, an OTLP export), read from
   * the store then; nothing is read between collections. A store that fails is logged, once
   * per run of failures, and nothing is observed that round (a cumulative reader keeps showing
   * the last values). Returns the unsubscribe.
   */
  observeQueue(read: () => Promise<QueueDepth>, logger: Logger): () => void {
    let failing = false;
    const callback = async (result: ObservableResult) => {
      let depth: QueueDepth;
      try {
        depth = await read();
      } catch (error) {
        if (!failing) {
          logger.warn(
            { err: error instanceof Error ? error.message : String(error) },
            'keyhook: could not count queued deliveries for keyhook.deliveries.queued',
          );
        }
        failing = true;
        return;
      }
      failing = false;
      for (const field of Object.keys(QUEUE_STATES) as (keyof QueueDepth)[]) {
        result.observe(depth[field], { 'keyhook.delivery.state': QUEUE_STATES[field] });
      }
    };
    this.queued.addCallback(callback);
    return () => this.queued.removeCallback(callback);
  }
}
