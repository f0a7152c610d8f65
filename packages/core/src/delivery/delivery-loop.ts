import type { Clock, RandomBytes, TimerHandle, Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import { RepeatedWarning } from '../repeated-warning.js';
import type { DeliveryWorker } from '../service-interfaces.js';
import type {
  AttemptCompletion,
  DeliveryRecord,
  LeasedDelivery,
  Store,
  WebhookRecord,
} from '../store/types.js';
import { deliveryOutcome, type KeyhookMetrics } from '../telemetry.js';
import type { KeyhookTracing } from '../tracing.js';
import { ENDPOINT_RATE_RULE } from './endpoint-rate.js';
import { Handoffs, leaseIdFrom } from './handoff.js';
import { judgeAttempt } from './outcome.js';
import { DEFAULT_HELD_RETENTION_MS, planAfterAttempt } from './plan.js';
import type { DeliveryHandoff } from './publish.js';
import { RetentionPurge } from './retention.js';
import { DELIVERY_RULES } from './rules.js';
import type { RetryPlan } from './schedule.js';
import type { SendOutcome, WebhookSender } from './sender.js';

export const DEFAULT_CONCURRENCY = 16;
export const DEFAULT_POLL_INTERVAL_MS = 1000;
/** Opened signing secrets kept per worker (oldest dropped first). */
const SECRET_CACHE_ENTRIES = 1000;
/** How often held deliveries are checked against their retention. */
export const HELD_EXPIRY_INTERVAL_MS = 60_000;
/**
 * Finished attempts a worker may have waiting to be recorded, per unit of concurrency. A slot is
 * free for the next send as soon as its attempt has an answer; its record goes to the store
 * meanwhile, where it joins the records of other attempts (a Postgres store writes those it
 * holds at once in one statement). Beyond this many, a finished attempt keeps its slot until
 * it is recorded, so a slow or unreachable store slows the sending down.
 */
export const RECORDING_PER_SLOT = 2;
/** After an outage the worker tries again after these waits, the last one repeating. */
const BACKOFF_MS = [100, 250, 500, 1000, 2000, 5000];

export interface DeliveryWorkerOptions {
  /**
   * Attempts sent at once. Default 16. An attempt leaves its slot when its answer came, and is
   * recorded meanwhile; at most twice as many wait to be recorded (then an attempt keeps its
   * slot until its record is written).
   */
  concurrency?: number | undefined;
  /**
   * How long a leased delivery stays this worker's. A worker that dies loses it after this
   * long, and another one (or a restart) sends the delivery again. Default: the attempt
   * timeout plus 30 s, so a live attempt always ends before its lease.
   */
  leaseMs?: number | undefined;
  /**
   * The fallback poll, for work this process was not told about (another process's publish
   * on a store without a change signal, a lease that ran out). Default 1 s.
   */
  pollIntervalMs?: number | undefined;
}

export interface DeliveryWorkerDeps {
  store: Store;
  clock: Clock;
  /** Where the poll, the retry timer and the outage backoff wait (the sender's timeout stays real). */
  timers: Timers;
  randomBytes: RandomBytes;
  logger: Logger;
  sender: WebhookSender;
  retry: RetryPlan;
  timeoutMs: number;
  heldRetentionMs?: number | undefined;
  /** How long finished deliveries are kept (checked by createKeyhook). */
  retentionMs: number;
  /** Opens a webhook's sealed signing secret. */
  signingSecret(webhook: WebhookRecord): string;
  /** The secret a rotation with an overlap replaced, opened; null when there is none. */
  previousSigningSecret(webhook: WebhookRecord): string | null;
  /** The host's callback when failures disabled an endpoint (docs/decisions.md §10.1). */
  onEndpointDisabled?: ((webhook: WebhookRecord) => void | Promise<void>) | undefined;
  /** Where attempts, their outcomes and disabled endpoints are counted. */
  metrics?: KeyhookMetrics | undefined;
  /** Where each attempt's span is made (and its `traceparent` header, when on). */
  tracing?: KeyhookTracing | undefined;
  /** A delivery this worker's attempt failed for good (no retry left, or 410 Gone). */
  onDeliveryFailed?: ((delivery: DeliveryRecord) => void | Promise<void>) | undefined;
}

/**
 * Leases due deliveries, sends them with bounded concurrency, records each attempt and
 * schedules the next (docs/decisions.md §8). It is woken when this process publishes or releases
 * deliveries, by the store's change signal (Postgres NOTIFY), and by its own timer for the
 * retries it scheduled; the poll is only the fallback. A store outage makes it back off and
 * log, never stop.
 */
export class DeliveryLoop implements DeliveryWorker {
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly pollIntervalMs: number;
  private readonly inFlight = new Set<Promise<void>>();
  /** Records of finished attempts that left their slot (RECORDING_PER_SLOT). */
  private readonly recording = new Set<Promise<void>>();
  private running = false;
  private loop: Promise<void> | undefined;
  private woken = false;
  private wakeIdle: (() => void) | undefined;
  private retryTimer: TimerHandle | undefined;
  private retryTimerAt = Number.POSITIVE_INFINITY;
  private unwatch: (() => void) | undefined;
  private lastHeldExpiry = 0;
  private outage = 0;
  /** The outage's warnings: the first at once, then one every REPEAT_WARNING_EVERY_MS. */
  private readonly outageLog: RepeatedWarning;
  private readonly leaseBatch: number;
  private readonly handoffs: Handoffs;
  private readonly retention: RetentionPurge;
  /**
   * Work may be due that the worker has not leased: a lease filled all its room, or a wake or
   * poll found no room to lease. A finished attempt (or room a publish gave back) then wakes
   * the loop; otherwise it does not, so deliveries handed over in their publish cost no empty
   * lease queries.
   */
  private backlog = true;
  /** Room the lease in progress may fill. */
  private leasing = 0;
  /**
   * Opened signing secrets by sealed value: opening one costs an AES-GCM decryption per
   * attempt otherwise. A rotation seals a new value, so a rotated secret is never served from
   * here. Plaintext stays in this process's memory only, as it must while signing.
   */
  private readonly secrets = new Map<string, string>();

  constructor(
    private readonly deps: DeliveryWorkerDeps,
    options: DeliveryWorkerOptions = {},
  ) {
    this.concurrency = positive(options.concurrency ?? DEFAULT_CONCURRENCY, 'concurrency');
    this.leaseMs = positive(options.leaseMs ?? deps.timeoutMs + 30_000, 'leaseMs');
    this.pollIntervalMs = positive(options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, 'pollIntervalMs');
    this.leaseBatch = Math.max(1, Math.floor(this.concurrency / 4));
    this.outageLog = new RepeatedWarning(deps.logger, deps.clock);
    this.handoffs = new Handoffs({
      clock: deps.clock,
      randomBytes: deps.randomBytes,
      concurrency: this.concurrency,
      leaseMs: this.leaseMs,
      timeoutMs: deps.timeoutMs,
      busy: () => this.inFlight.size + this.leasing,
      start: (delivery) => this.track(this.attempt(delivery)),
      roomReturned: () => {
        if (this.backlog) this.wake();
      },
    });
    this.retention = new RetentionPurge({
      store: deps.store,
      clock: deps.clock,
      timers: deps.timers,
      logger: deps.logger,
      retentionMs: deps.retentionMs,
    });
    if (this.leaseMs <= deps.timeoutMs) {
      // A lease shorter than an attempt would hand a live attempt to a second worker.
      throw new RangeError(
        `leaseMs (${this.leaseMs}) must be longer than the attempt timeout (${deps.timeoutMs})`,
      );
    }
  }

  get started(): boolean {
    return this.running;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.unwatch = this.deps.store.watchDeliveries(() => this.wake());
    this.loop = this.run();
    this.retention.start();
  }

  /** Something may be due now: lease without waiting for the poll. */
  wake(): void {
    this.woken = true;
    this.wakeIdle?.();
  }

  /**
   * Sets room aside for the deliveries of a publish about to be written, so the publish can
   * lease them to this worker in its own transaction (the handoff; delivery/handoff.ts).
   * Undefined when the worker is not running or has no room: the deliveries are then written
   * pending and leased as usual.
   */
  reserveHandoff(): DeliveryHandoff | undefined {
    return this.running ? this.handoffs.reserve() : undefined;
  }

  /**
   * Stops leasing, lets the attempts in flight finish and record (each ends within the
   * attempt timeout), then resolves. Deliveries not yet leased stay for the next worker.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.unwatch?.();
    this.wake();
    await Promise.all([this.loop, this.retention.stop()]);
    // A publish that reserved room before the stop hands its deliveries over when it returns;
    // what was handed over is sent (each finished attempt starts the next one waiting).
    await this.handoffs.allSettled();
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
    await Promise.all(this.recording);
    this.deps.timers.clearTimeout(this.retryTimer);
    this.secrets.clear();
    this.deps.sender.close();
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.woken = false;
      const room = this.concurrency - this.inFlight.size - this.handoffs.pending;
      // Busy: lease when a batch's worth of room is free, not one delivery per finished attempt
      // (each lease is a write transaction). Idle or nearly so: lease whatever room there is.
      const leaseNow = room >= this.leaseBatch || (room > 0 && this.inFlight.size < this.leaseBatch);
      if (!leaseNow) this.backlog = true;
      if (leaseNow) {
        // Publishes meanwhile may reserve only what this lease leaves.
        this.leasing = room;
        const leased = await this.lease(room);
        this.leasing = 0;
        // A publish during the lease found its room counted as the lease's: its handover waits.
        this.startWaiting();
        if (leased === null) {
          await this.idle(this.backoff());
          continue;
        }
        for (const delivery of leased.deliveries) this.track(this.attempt(delivery));
        // A full batch, or one whose rate-limited deliveries were given later slots: more may be due already.
        this.backlog = leased.deliveries.length === room || leased.deferred > 0;
        if (this.backlog && this.running) continue;
        await this.expireHeld();
      }
      await this.idle(this.pollIntervalMs);
    }
  }

  private async lease(room: number): Promise<{ deliveries: LeasedDelivery[]; deferred: number } | null> {
    try {
      let deferred = 0;
      const deliveries = await this.deps.store.leaseDeliveries({
        now: this.deps.clock.now(),
        limit: room,
        leaseMs: this.leaseMs,
        leaseId: leaseIdFrom(this.deps.randomBytes),
        rate: ENDPOINT_RATE_RULE,
        // docs/decisions.md §8.18: wake at a limited endpoint's next slot, not at the poll. The
        // millisecond after it: a deferred delivery is due at its slot rounded up.
        onRateWait: (wait) => {
          deferred = wait.deferred;
          this.wakeAt(Math.ceil(wait.nextSlotAt.getTime()) + 1);
        },
      });
      this.recovered();
      return { deliveries, deferred };
    } catch (error) {
      this.failed(error, 'lease deliveries');
      return null;
    }
  }

  /** Handed-over deliveries that waited for a slot, while slots are free. */
  private startWaiting(): void {
    while (this.inFlight.size < this.concurrency) {
      const next = this.handoffs.next();
      if (!next) return;
      this.track(this.attempt(next));
    }
  }

  private track(attempt: Promise<void>): void {
    const work = this.guarded(attempt).finally(() => {
      this.inFlight.delete(work);
      const next = this.handoffs.next();
      if (next) this.track(this.attempt(next));
      if (this.backlog) this.wake(); // room for one more of what is due
    });
    this.inFlight.add(work);
  }

  /** attempt() and record() handle their own failures; this catch is the net for a bug, never a crash. */
  private guarded(work: Promise<void>): Promise<void> {
    return work.catch((error: unknown) =>
      this.deps.logger.error({ err: messageOf(error) }, 'keyhook: a delivery attempt failed unexpectedly'),
    );
  }

  private async attempt({ delivery, event, webhook }: LeasedDelivery): Promise<void> {
    const attempt = delivery.attempts + 1;
    const startedAt = this.deps.clock.now();
    const span = this.deps.tracing?.startAttempt({
      url: webhook.url,
      tenantId: delivery.tenantId,
      webhookId: webhook.id,
      deliveryId: delivery.id,
      eventId: event.id,
      eventType: event.type,
      attempt,
      traceContext: event.traceContext,
      startedAt,
    });
    let sent: SendOutcome;
    try {
      sent = await this.deps.sender.send({
        url: webhook.url,
        payload: event.payload,
        eventId: event.id,
        secret: this.secretsOf(webhook, startedAt),
        unixSeconds: Math.floor(startedAt.getTime() / 1000),
        signatureScheme: webhook.signatureScheme,
        traceparent: span?.traceparent,
      });
    } catch (error) {
      // Only a secret that will not open gets here (a missing previous encryption key).
      this.deps.logger.error(
        { webhookId: webhook.id, deliveryId: delivery.id, err: messageOf(error) },
        'keyhook: could not sign a delivery; check encryptionKey and previousEncryptionKeys',
      );
      sent = {
        result: { kind: 'error', message: 'the signing secret could not be opened' },
        durationMs: 0,
        responseBody: null,
      };
    }
    if (sent.refusal !== undefined) {
      // The attempt log, which the tenant reads, says only that the host is not public.
      this.deps.logger.warn(
        { tenantId: delivery.tenantId, webhookId: webhook.id, deliveryId: delivery.id, reason: sent.refusal },
        'keyhook: a delivery was refused at connect time by the webhook URL policy',
      );
    }
    const finishedAt = this.deps.clock.now();
    const plan = planAfterAttempt(
      attempt,
      judgeAttempt(sent.result, finishedAt),
      finishedAt,
      this.deps.retry,
    );
    const completion: AttemptCompletion = {
      tenantId: delivery.tenantId,
      deliveryId: delivery.id,
      leaseId: delivery.leaseId!,
      attempt: {
        deliveryId: delivery.id,
        tenantId: delivery.tenantId,
        attempt,
        startedAt,
        durationMs: sent.durationMs,
        statusCode: sent.result.kind === 'response' ? sent.result.status : null,
        error: sent.result.kind === 'error' ? sent.result.message : redirectNote(sent.result.status),
        responseBody: sent.responseBody,
      },
      status: plan.status,
      dueAt: plan.nextAttemptAt,
      endpointFailures: plan.endpointFailures,
      autoDisable: DELIVERY_RULES.autoDisable,
      at: finishedAt,
    };
    // The span ends at the attempt's end, with the outcome the store recorded (a retry of an
    // endpoint disabled meanwhile is held), or with none when it was not recorded.
    const recorded = this.record(completion, delivery.dueAt!, event.createdAt).then(
      (state) => {
        span?.end(sent.result, state, finishedAt);
        if (plan.nextAttemptAt) this.wakeAt(plan.nextAttemptAt.getTime());
      },
      (error: unknown) => {
        span?.end(sent.result, undefined, finishedAt);
        throw error;
      },
    );
    if (this.recording.size >= this.concurrency * RECORDING_PER_SLOT) return recorded;
    // The slot is free now; the record is written beside the next sends.
    const record = this.guarded(recorded).finally(() => this.recording.delete(record));
    this.recording.add(record);
  }

  /** The current secret, and beside it the previous one while its overlap lasts (at `now`). */
  private secretsOf(webhook: WebhookRecord, now: Date): string | readonly string[] {
    const current = this.opened(webhook, webhook.secretSealed, () => this.deps.signingSecret(webhook));
    const expiresAt = webhook.previousSecretExpiresAt;
    const sealed = webhook.previousSecretSealed;
    if (sealed === null || expiresAt === null || expiresAt.getTime() <= now.getTime()) return current;
    const previous = this.opened(webhook, sealed, () => this.deps.previousSigningSecret(webhook)!);
    return [current, previous];
  }

  /**
   * An opened secret, by its row and sealed value: opening (AES-GCM) once per secret, not per
   * attempt. The row is part of the key, so a sealed value copied onto another row is opened
   * there, and refused by its associated data, rather than served from the cache.
   */
  private opened(webhook: WebhookRecord, sealed: string, open: () => string): string {
    const slot = `${webhook.tenantId}\u0000${webhook.id}\u0000${sealed}`;
    let secret = this.secrets.get(slot);
    if (secret === undefined) {
      secret = open();
      if (this.secrets.size >= SECRET_CACHE_ENTRIES) this.secrets.delete(this.secrets.keys().next().value!);
      this.secrets.set(slot, secret);
    }
    return secret;
  }

  /**
   * Records the attempt, retrying through an outage for as long as the lease lives, and resolves
   * with the delivery's recorded state. After that (undefined) another worker owns the delivery
   * and will send it again: at least once, never lost.
   */
  private async record(
    completion: AttemptCompletion,
    leaseEnds: Date,
    publishedAt: Date,
  ): Promise<DeliveryRecord['status'] | undefined> {
    for (let tries = 0; ; tries++) {
      try {
        const outcome = await this.deps.store.completeAttempt(completion);
        this.recovered();
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
        this.failed(error, 'record an attempt');
        const wait = BACKOFF_MS[Math.min(tries, BACKOFF_MS.length - 1)]!;
        if (this.deps.clock.now().getTime() + wait >= leaseEnds.getTime()) return undefined;
        await this.sleep(wait);
      }
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
      { webhookId: webhook.id, tenantId: webhook.tenantId },
      `keyhook: webhook disabled after ${DELIVERY_RULES.autoDisable.after} consecutive failed deliveries`,
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

  private async expireHeld(): Promise<void> {
    const now = this.deps.clock.now();
    if (now.getTime() - this.lastHeldExpiry < HELD_EXPIRY_INTERVAL_MS) return;
    this.lastHeldExpiry = now.getTime();
    const retention = this.deps.heldRetentionMs ?? DEFAULT_HELD_RETENTION_MS;
    try {
      await this.deps.store.expireHeldDeliveries(new Date(now.getTime() - retention), now);
    } catch (error) {
      this.failed(error, 'expire held deliveries');
    }
  }

  /** A timer for the earliest retry this worker scheduled, so it goes out on time without polling. */
  private wakeAt(epochMs: number): void {
    if (!this.running || epochMs >= this.retryTimerAt) return;
    this.deps.timers.clearTimeout(this.retryTimer);
    this.retryTimerAt = epochMs;
    // Unref'd: while the worker runs, its poll already keeps the process alive.
    this.retryTimer = this.deps.timers.setTimeout(
      () => {
        this.retryTimerAt = Number.POSITIVE_INFINITY;
        this.wake();
      },
      Math.max(0, epochMs - this.deps.clock.now().getTime()),
      { unref: true },
    );
  }

  private idle(ms: number): Promise<void> {
    if (this.woken || !this.running) return Promise.resolve();
    const timers = this.deps.timers;
    return new Promise((resolve) => {
      const timer = timers.setTimeout(done, ms);
      function done() {
        timers.clearTimeout(timer);
        resolve();
      }
      this.wakeIdle = () => {
        this.wakeIdle = undefined;
        done();
      };
    });
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.deps.timers.setTimeout(resolve, ms));
  }

  private backoff(): number {
    return BACKOFF_MS[Math.min(this.outage - 1, BACKOFF_MS.length - 1)]!;
  }

  private failed(error: unknown, what: string): void {
    this.outage++;
    this.outageLog.warn(
      { err: messageOf(error), failures: this.outage },
      `keyhook: delivery worker could not ${what}; backing off`,
    );
  }

  private recovered(): void {
    if (this.outage === 0) return;
    this.outageLog.over('keyhook: delivery worker reached the store again');
    this.outage = 0;
  }
}

function positive(value: number, name: string): number {
  if (!Number.isFinite(value) || value <= 0)
    throw new RangeError(`${name} must be a positive number, got ${value}`);
  return value;
}

function redirectNote(status: number): string | null {
  return status >= 300 && status < 400 ? 'redirects are not followed' : null;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
