import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Clock, TimerHandle, Timers } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/types.js';

/** How long finished deliveries, their attempts and their events are kept. Default 30 days. */
export const DEFAULT_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
/** The shortest retention accepted: a second (a soak test's). */
export const MIN_RETENTION_MS = 1000;
/** Rows per purge statement: small, so no batch holds locks a lease or a completion waits on for long. */
export const PURGE_BATCH = 500;
/** Batches per round at most; the next round carries on. */
const MAX_BATCHES_PER_ROUND = 200;

/** A round every tenth of the retention, between 100 ms and a minute. */
export function purgeIntervalFor(retentionMs: number): number {
  return Math.min(60_000, Math.max(100, Math.floor(retentionMs / 10)));
}

export function checkRetention(retentionMs: number | undefined): number {
  const value = retentionMs ?? DEFAULT_RETENTION_MS;
  if (!Number.isSafeInteger(value) || value < MIN_RETENTION_MS) {
    throw new TypeError(
      `keyhook: delivery.retentionMs must be whole milliseconds, at least ${MIN_RETENTION_MS} (default 30 days)`,
    );
  }
  return value;
}

export interface RetentionDeps {
  store: Store;
  clock: Clock;
  /** The purge's round timer runs on these (a test's virtual clock moves it). */
  timers: Timers;
  logger: Logger;
  retentionMs: number;
}

/**
 * Deletes what retention lets go, on a timer of its own: a worker that always has a backlog
 * still purges. Each round deletes in batches of PURGE_BATCH, yielding between them, until a
 * batch comes back short. Where several instances share a store, the store lets one purge at a
 * time and the others skip the round.
 */
export class RetentionPurge {
  private timer: TimerHandle | undefined;
  private round: Promise<void> | undefined;
  private stopped = true;

  constructor(private readonly deps: RetentionDeps) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    // Unref'd: a purge round is background work that never holds up a host's exit.
    this.timer = this.deps.timers.setInterval(() => this.tick(), purgeIntervalFor(this.deps.retentionMs), {
      unref: true,
    });
  }

  /** Stops the timer and waits for the batch in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.deps.timers.clearInterval(this.timer);
    await this.round;
  }

  private tick(): void {
    if (this.round) return;
    this.round = this.purge().finally(() => {
      this.round = undefined;
    });
  }

  private async purge(): Promise<void> {
    const finishedBefore = new Date(this.deps.clock.now().getTime() - this.deps.retentionMs);
    try {
      for (let batch = 0; batch < MAX_BATCHES_PER_ROUND && !this.stopped; batch++) {
        const purged = await this.deps.store.purgeFinishedDeliveries(finishedBefore, PURGE_BATCH);
        if (purged.skipped || (purged.deliveries < PURGE_BATCH && purged.events < PURGE_BATCH)) return;
        await yieldToLoop();
      }
    } catch (error) {
      // An outage: the worker reports it; the next round tries again.
      this.deps.logger.warn(
        { err: error instanceof Error ? error.message : String(error) },
        'keyhook: could not purge finished deliveries',
      );
    }
  }
}
