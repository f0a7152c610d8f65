import type { Clock, Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import type {
  AttemptCompletion,
  AttemptCompletionOutcome,
  DeliveryRecord,
  Store,
  WebhookRecord,
} from '../store/types.js';
import { deliveryOutcome, type KeyhookMetrics } from '../telemetry.js';
import { DELIVERY_RULES } from './rules.js';

/** After an outage the worker tries again after these waits, the last one repeating. */
const OUTAGE_BACKOFF_MS = [100, 250, 500, 1000, 2000, 5000];

/** The wait before the next try, after `failures` failed tries in a row (1 or more). */
export function outageBackoff(failures: number): number {
  return OUTAGE_BACKOFF_MS[Math.min(failures - 1, OUTAGE_BACKOFF_MS.length - 1)]!;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export interface AttemptRecordingDeps {
  store: Store;
  clock: Clock;
  /** Where a retry of a record waits (the worker's timers). */
  timers: Timers;
  logger: Logger;
  metrics?: KeyhookMetrics | undefined;
  onEndpointDisabled?: ((webhook: WebhookRecord) => void | Promise<void>) | undefined;
  onDeliveryFailed?: ((delivery: DeliveryRecord) => void | Promise<void>) | undefined;
  /** The store failed, or answered again: the worker's outage, counted and logged once for all its calls. */
  failed(error: unknown, what: string): void;
  recovered(): void;
}

/**
 * Writes a finished attempt to the store under its lease (docs/decisions.md §8.6), through an
 * outage for as long as the lease lives; tells an earlier try whose answer was lost from a lease
 * that ran out (§8.4); counts the attempt and calls the host's callbacks once it is written.
 */
export class AttemptRecording {
  constructor(private readonly deps: AttemptRecordingDeps) {}

  /**
   * Records the attempt, retrying through an outage for as long as the lease lives, and resolves
   * with the delivery's recorded state. After that (undefined) another worker owns the delivery
   * and will send it again: at least once, never lost.
   */
  async record(
    completion: AttemptCompletion,
    webhookId: string,
    leaseEnds: Date,
    publishedAt: Date,
  ): Promise<DeliveryRecord['status'] | undefined> {
    for (let tries = 0; ; tries++) {
      try {
        let outcome = await this.deps.store.completeAttempt(completion);
        this.deps.recovered();
        // A try whose answer was lost may have written it: then this one finds the lease gone.
        if (outcome.outcome === 'lease_lost' && tries > 0) {
          outcome = (await this.recordedEarlier(completion, webhookId)) ?? outcome;
        }
        if (outcome.outcome === 'recorded') this.measure(completion, outcome.delivery.status, publishedAt);
        if (outcome.outcome === 'lease_lost') {
          this.deps.logger.warn(
            { deliveryId: completion.deliveryId },
            'keyhook: a delivery lease ran out before its attempt was recorded; it will be sent again',
          );
        } else {
          if (outcome.delivery.status === 'failed') {
            const delivery = outcome.delivery;
            this.callBack('onDeliveryFailed', { deliveryId: delivery.id }, () =>
              this.deps.onDeliveryFailed?.(delivery),
            );
          }
          if (outcome.disabledWebhook) this.endpointDisabled(outcome.disabledWebhook);
        }
        return outcome.outcome === 'recorded' ? outcome.delivery.status : undefined;
      } catch (error) {
        this.deps.failed(error, 'record an attempt');
        const wait = outageBackoff(tries + 1);
        if (this.deps.clock.now().getTime() + wait >= leaseEnds.getTime()) return undefined;
        await new Promise<void>((resolve) => this.deps.timers.setTimeout(() => resolve(), wait));
      }
    }
  }

  /**
   * The outcome of an earlier try of `completion` that the store wrote but whose answer was lost:
   * the delivery's log holds this very attempt (its number and start). Null when it does not, or
   * when the store cannot say: then the lease did run out, and the delivery goes again.
   */
  private async recordedEarlier(
    completion: AttemptCompletion,
    webhookId: string,
  ): Promise<AttemptCompletionOutcome | null> {
    const { tenantId, deliveryId, attempt, autoDisable, at } = completion;
    try {
      const detail = await this.deps.store.getDelivery(tenantId, webhookId, deliveryId);
      const logged = detail?.attempts.some(
        (entry) =>
          entry.attempt === attempt.attempt && entry.startedAt.getTime() === attempt.startedAt.getTime(),
      );
      if (!detail || !logged) return null;
      // Whether that try disabled the endpoint: disabled for failures at the very time it recorded.
      const webhook = await this.deps.store.getWebhook(tenantId, webhookId);
      const disabledWebhook =
        webhook !== null &&
        webhook.disabledReason === autoDisable.reason &&
        webhook.updatedAt.getTime() === at.getTime()
          ? webhook
          : null;
      this.deps.logger.info(
        { deliveryId, attempt: attempt.attempt },
        'keyhook: an attempt was recorded by a try whose answer was lost; it is not sent again',
      );
      return { outcome: 'recorded', delivery: detail.delivery, disabledWebhook };
    } catch {
      return null;
    }
  }

  /** The attempt as the metrics count it, once the store has it. */
  private measure(completion: AttemptCompletion, status: DeliveryRecord['status'], publishedAt: Date): void {
    const outcome = deliveryOutcome(status);
    if (outcome === undefined || this.deps.metrics === undefined) return;
    const { durationMs, statusCode } = completion.attempt;
    const lagMs = outcome === 'succeeded' ? completion.at.getTime() - publishedAt.getTime() : null;
    this.deps.metrics.attempt(outcome, durationMs, statusCode, lagMs);
  }

  private endpointDisabled(webhook: WebhookRecord): void {
    this.deps.metrics?.endpointDisabled();
    this.deps.logger.warn(
      { webhookId: webhook.id, tenantId: webhook.tenantId, reason: webhook.disabledReason },
      webhook.disabledReason === DELIVERY_RULES.gone.reason
        ? 'keyhook: webhook disabled: its receiver answered 410 Gone'
        : `keyhook: webhook disabled after ${DELIVERY_RULES.autoDisable.after} consecutive failed deliveries`,
    );
    this.callBack('onEndpointDisabled', { webhookId: webhook.id }, () =>
      this.deps.onEndpointDisabled?.(webhook),
    );
  }

  /**
   * A host's callback, after the change it reports is committed. Never awaited: one that hangs
   * holds nothing of delivery, one that throws or rejects is logged.
   */
  private callBack(name: string, context: object, call: () => void | Promise<void> | undefined): void {
    const failed = (error: unknown) =>
      this.deps.logger.error({ ...context, err: messageOf(error) }, `keyhook: ${name} threw`);
    try {
      const returned: unknown = call();
      // A host in JavaScript may return anything; only a thenable is watched for a rejection.
      if (typeof (returned as PromiseLike<void> | undefined)?.then === 'function') {
        (returned as PromiseLike<void>).then(undefined, failed);
      }
    } catch (error) {
      failed(error);
    }
  }
}
