import { type Clock, epochMs, type RandomBytes, type TimerHandle, type Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import { RepeatedWarning } from '../repeated-warning.js';
import type { DeliveryWorker } from '../service-interfaces.js';
import type {
  AttemptCompletion,
  DeliveryRecord,
  EndedLease,
  LeasedDelivery,
  Store,
  WebhookRecord,
} from '../store/types.js';
import type { KeyhookMetrics } from '../telemetry.js';
import type { KeyhookTracing } from '../tracing.js';
import { AttemptRecording, messageOf, outageBackoff } from './attempt-recording.js';
import { ENDPOINT_RATE_RULE } from './endpoint-rate.js';
import { type EndpointConcurrency, EndpointSlots, endpointCapOf } from './endpoint-slots.js';
import { Handoffs, leaseIdFrom } from './handoff.js';
import { judgeAttempt } from './outcome.js';
import { DEFAULT_HELD_RETENTION_MS, planAfterAttempt } from './plan.js';
import type { DeliveryHandoff } from './publish.js';
import { RetentionPurge } from './retention.js';
import type { RetryPlan } from './schedule.js';
import type { SendOutcome, WebhookSender } from './sender.js';

export const DEFAULT_CONCURRENCY = 64;
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
/** Leases a worker keeps to end at its next claim; beyond, the oldest are left to run out. */
const MAX_ENDED_LEASES = 256;

export interface DeliveryWorkerOptions {
  /**
   * Attempts sent at once, to every endpoint together. Default 64. An attempt leaves its slot
   * when its answer came, and is recorded meanwhile; at most twice as many wait to be recorded
   * (then an attempt keeps its slot until its record is written).
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
  /**
   * Attempts to one endpoint this worker runs at once, so that an endpoint that hangs holds its
   * own slots and never the others' (docs/decisions.md §8.20). Default 16, or `concurrency` if
   * that is less. A function gives each endpoint its own, read when the worker starts work for
   * it after a pause.
   */
  endpointConcurrency?: EndpointConcurrency | undefined;
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
export class Worker implements DeliveryWorker {
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
  /** Later wake times asked for while an earlier timer runs, ascending (at most WAKE_TIMES_KEPT). */
  private laterWakes: number[] = [];
  private unwatch: (() => void) | undefined;
  private lastHeldExpiry = 0;
  private outage = 0;
  /** The outage's warnings: the first at once, then one every REPEAT_WARNING_EVERY_MS. */
  private readonly outageLog: RepeatedWarning;
  private readonly leaseBatch: number;
  private readonly handoffs: Handoffs;
  /** A turn is queued to start handed-over deliveries (HandoffDeps.handedOver). */
  private handoverQueued = false;
  /** Each endpoint's share of the slots, and the deliveries waiting for one (§8.20). */
  private readonly slots: EndpointSlots;
  /** The endpoints the last claim left because their slots were full: one freeing a slot wakes the loop. */
  private skipped = new Set<string>();
  /**
   * Leases the next claim ends (LeaseRequest.endLeases): claims and publishes whose answer was
   * lost, so what they leased goes now rather than when the lease runs out (§8.4), and
   * deliveries that waited for their endpoint's slot until their lease could no longer hold an
   * attempt.
   */
  private endLeases: EndedLease[] = [];
  private readonly retention: RetentionPurge;
  private readonly recorder: AttemptRecording;
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
    this.slots = new EndpointSlots(endpointCapOf(options.endpointConcurrency, this.concurrency, deps.logger));
    this.outageLog = new RepeatedWarning(deps.logger, deps.clock);
    this.handoffs = new Handoffs({
      clock: deps.clock,
      randomBytes: deps.randomBytes,
      concurrency: this.concurrency,
      leaseMs: this.leaseMs,
      timeoutMs: deps.timeoutMs,
      // Deliveries waiting for their endpoint's slot count too: an endpoint that hangs takes no more handoffs than that.
      busy: () => this.inFlight.size + this.leasing + this.slots.waiting,
      handedOver: () => {
        if (this.handoverQueued) return;
        this.handoverQueued = true;
        setImmediate(() => {
          this.handoverQueued = false;
          this.startHandedOver();
        });
      },
      roomReturned: () => {
        if (this.backlog) this.wake();
      },
      leaseLost: (leaseId) => {
        this.endLease({ leaseId });
        this.wake();
      },
    });
    this.recorder = new AttemptRecording({
      store: deps.store,
      clock: deps.clock,
      timers: deps.timers,
      logger: deps.logger,
      metrics: deps.metrics,
      onEndpointDisabled: deps.onEndpointDisabled,
      onDeliveryFailed: deps.onDeliveryFailed,
      failed: (error, what) => this.failed(error, what),
      recovered: () => this.recovered(),
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
    this.startHandedOver();
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
    await Promise.all(this.recording);
    await this.giveBack();
    this.deps.timers.clearTimeout(this.retryTimer);
    this.laterWakes = [];
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
        const skip = this.slots.full();
        const leased = await this.lease(room, skip);
        this.leasing = 0;
        if (leased === null) {
          this.startNext();
          await this.idle(this.backoff());
          continue;
        }
        this.skipped = new Set(skip);
        for (const delivery of leased.deliveries) this.dispatch(delivery);
        // A publish during the lease found its room counted as the lease's: its handover waited until now.
        this.startNext();
        // A full batch, or one whose rate-limited deliveries were given later slots: more may be due already.
        this.backlog = leased.deliveries.length === room || leased.deferred > 0;
        if (this.backlog && this.running) continue;
        await this.expireHeld();
      }
      await this.idle(this.pollIntervalMs);
    }
  }

  private async lease(
    room: number,
    skip: readonly string[],
  ): Promise<{ deliveries: LeasedDelivery[]; deferred: number } | null> {
    const leaseId = leaseIdFrom(this.deps.randomBytes);
    const ending = this.endLeases;
    this.endLeases = [];
    try {
      let deferred = 0;
      const deliveries = await this.deps.store.leaseDeliveries({
        now: this.deps.clock.now(),
        limit: room,
        leaseMs: this.leaseMs,
        leaseId,
        rate: ENDPOINT_RATE_RULE,
        ...(skip.length > 0 && { skipEndpoints: skip }),
        ...(ending.length > 0 && { endLeases: ending }),
        // docs/decisions.md §8.18: wake at a limited endpoint's next slot, not at the poll. The
        // millisecond after it: a deferred delivery is due at its slot rounded up.
        onRateWait: (wait) => {
          deferred = wait.deferred;
          for (const slot of wait.nextSlots) this.wakeAt(Math.ceil(slot.getTime()) + 1);
        },
      });
      this.recovered();
      return { deliveries, deferred };
    } catch (error) {
      // The claim may have committed before its answer was lost: the next claim ends its lease,
      // so what it leased goes then, not when the lease runs out (§8.4). Those it was to end too.
      this.endLeases.unshift(...ending);
      this.endLease({ leaseId });
      this.failed(error, 'lease deliveries');
      return null;
    }
  }

  /**
   * At the stop: deliveries still waiting for their endpoint's slot, and leases still to end, go
   * back to the queue at once (a claim of none that only ends leases), for another worker to take
   * now rather than when the leases run out. A store that cannot be reached leaves them to run out.
   */
  private async giveBack(): Promise<void> {
    for (const waiting of this.slots.drain()) {
      this.endLease({ leaseId: waiting.delivery.leaseId!, deliveryId: waiting.delivery.id });
    }
    if (this.endLeases.length === 0) return;
    const endLeases = this.endLeases;
    this.endLeases = [];
    try {
      await this.deps.store.leaseDeliveries({
        now: this.deps.clock.now(),
        limit: 0,
        leaseMs: this.leaseMs,
        leaseId: leaseIdFrom(this.deps.randomBytes),
        endLeases,
      });
    } catch (error) {
      this.failed(error, 'give back leased deliveries');
    }
  }

  /** A lease for the next claim to end; the list keeps the latest MAX_ENDED_LEASES (older ones run out on their own). */
  private endLease(lease: EndedLease): void {
    this.endLeases.push(lease);
    if (this.endLeases.length > MAX_ENDED_LEASES) this.endLeases.shift();
  }

  /** A leased delivery: its attempt starts now when its endpoint has a free slot, or waits for one. */
  private dispatch(delivery: LeasedDelivery): void {
    if (this.slots.take(delivery)) this.track(delivery);
  }

  /**
   * Fills free slots with what waits: deliveries whose endpoint has a slot again, then handed-over
   * ones. One that waited until its lease could no longer hold an attempt is given back (§8.20).
   */
  private startNext(): void {
    const startsBy = epochMs(this.deps.clock) + this.deps.timeoutMs;
    while (this.inFlight.size < this.concurrency) {
      // A stopping worker starts nothing that waited for its endpoint: it gives those back (giveBack).
      const waited = !this.running
        ? undefined
        : this.slots.next(startsBy, (late) => {
            this.endLease({ leaseId: late.delivery.leaseId!, deliveryId: late.delivery.id });
            this.wake();
          });
      if (waited) {
        this.track(waited);
        continue;
      }
      const handed = this.handoffs.next();
      if (!handed) return;
      this.dispatch(handed);
    }
  }

  /** Handed-over deliveries, as many as the slots not held by attempts or the worker's own lease take. */
  private startHandedOver(): void {
    while (this.inFlight.size + this.leasing < this.concurrency) {
      const handed = this.handoffs.next();
      if (!handed) return;
      this.dispatch(handed);
    }
  }

  private track(delivery: LeasedDelivery): void {
    const webhookId = delivery.webhook.id;
    const work = this.guarded(this.attempt(delivery)).finally(() => {
      this.inFlight.delete(work);
      this.slots.free(webhookId);
      this.startNext();
      // Room for one more of what is due, or of an endpoint the last claim left for want of slots.
      if (this.backlog) this.wake();
      else if (this.skipped.has(webhookId) && !this.slots.isFull(webhookId)) {
        this.skipped.delete(webhookId);
        this.wake();
      }
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
      autoDisable: plan.autoDisable,
      at: finishedAt,
    };
    // The span ends at the attempt's end, with the outcome the store recorded (a retry of an
    // endpoint disabled meanwhile is held), or with none when it was not recorded.
    const recorded = this.recorder.record(completion, webhook.id, delivery.dueAt!, event.createdAt).then(
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

  /**
   * Wakes the worker at `epochMs`: a retry it scheduled, or a limited endpoint's next slot, goes
   * out on time without polling. One timer runs, for the earliest; a later time asked for
   * meanwhile is kept, and the timer is set for it once the earlier one has fired, so each paced
   * endpoint keeps its own slots (docs/decisions.md §8.18).
   */
  private wakeAt(epochMs: number): void {
    if (!this.running) return;
    if (epochMs === this.retryTimerAt) return;
    if (epochMs > this.retryTimerAt) {
      keepWake(this.laterWakes, epochMs);
      return;
    }
    if (this.retryTimerAt !== Number.POSITIVE_INFINITY) keepWake(this.laterWakes, this.retryTimerAt);
    this.deps.timers.clearTimeout(this.retryTimer);
    this.retryTimerAt = epochMs;
    // Unref'd: while the worker runs, its poll already keeps the process alive.
    this.retryTimer = this.deps.timers.setTimeout(
      () => {
        this.retryTimerAt = Number.POSITIVE_INFINITY;
        const now = this.deps.clock.now().getTime();
        this.laterWakes = this.laterWakes.filter((at) => at > now);
        const next = this.laterWakes.shift();
        if (next !== undefined) this.wakeAt(next);
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

  private backoff(): number {
    return outageBackoff(this.outage);
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

/** How many later wake times a worker keeps: the earliest ones (one per paced endpoint, and retries). */
const WAKE_TIMES_KEPT = 256;

/** Adds `at` to the ascending `times`, once, keeping the earliest WAKE_TIMES_KEPT. */
function keepWake(times: number[], at: number): void {
  let i = times.length;
  while (i > 0 && times[i - 1]! > at) i--;
  if (times[i - 1] === at) return;
  times.splice(i, 0, at);
  if (times.length > WAKE_TIMES_KEPT) times.pop();
}
