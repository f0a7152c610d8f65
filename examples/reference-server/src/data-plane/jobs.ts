import { type Clock, isKeyhookError, type Logger } from '@keyhook/core';
import type { ApplyStorage } from './apply.js';
import type { IdempotencyKeys } from './idempotency-keys.js';
import type { RunRecord } from './model.js';
import type { RunStorage } from './runs.js';

/** A job's claim older than this is taken as its worker's death: another job takes the run. */
export const DEFAULT_STALE_CLAIM_MS = 60_000;
/** How often each instance looks for runs nobody is working on (another instance's, a crash's). */
export const DEFAULT_SWEEP_MS = 2_000;

export interface StagingJobHooks {
  /** Runs inside discovery, after the diff; a throw fails the run (tests force `run.failed` so). */
  afterDiscovery?(run: RunRecord): void | Promise<void>;
  /** Runs when a build has claimed its run, before its transaction: the apply holds the source meanwhile. */
  beforeBuild?(run: RunRecord): void | Promise<void>;
  /**
   * Runs inside the apply's transaction, after the build and before the switch; a throw fails
   * the apply. It must not use the data plane itself: on SQLite the transaction holds the
   * connection, and a request of its own would wait for it forever.
   */
  beforeSwitch?(run: RunRecord): void | Promise<void>;
  /**
   * Tests only: runs before each chunk's transaction of a large piece of work (a chunked
   * snapshot's writes, a run start's copy, discovery, a build), outside any transaction; a throw
   * fails that work as a failing chunk would. Lets a test stretch the work past the stale-claim
   * time, or change the database between two chunks.
   */
  beforeChunk?(step: ChunkStep): void | Promise<void>;
}

/** Which chunk of which work is next (StagingJobHooks.beforeChunk). */
export interface ChunkStep {
  work: 'snapshot' | 'pin' | 'discovery' | 'build';
  sourceId: string;
  /** The run, for all but a snapshot. */
  runId?: string;
  /**
   * 0 for the first; for discovery and a build, 0 comes before the clean-up of what an earlier
   * attempt left (its first transaction), 1 before the first chunk of the diff or the build.
   */
  chunk: number;
}

/**
 * A job's claim on a run: the `claimed_at` it wrote. Every chunk's transaction moves it on with a
 * compare-and-swap on this value (renewClaim in runs.ts), and the job carries the new value once
 * that transaction commits, so a claim stays fresh for as long as its job makes progress.
 */
export interface JobClaim {
  at: number;
}

/** Work of the jobs' clean-up lane (StagingJobs). */
interface CleanUp {
  /** For the log, should it fail. */
  what: string;
  work: () => Promise<void>;
  /**
   * Work that a later run of the same key does whole (a tenant's content prune, a sweep step):
   * queued again, it replaces the one still waiting, at the end of the lane; once the jobs are
   * stopped, one still waiting is left for later (garbage only: the next prune or sweep).
   */
  key?: string;
}

/**
 * The data plane's jobs of its own (data-plane.md §4.3: discovery and the generation build run
 * asynchronously). A run is claimed by exactly one job at a time (a compare-and-set on its
 * status and claim time), so any number of instances share the work; each is kicked when its
 * own request queues work and sweeps every few seconds for the rest. One job runs at a time per
 * instance. A store outage leaves the run where it was, its claim given back when the store
 * answers that, and a later sweep takes it again.
 *
 * What a job leaves to clean up once its run has ended (an apply's pinned set and the content
 * nobody refers to any more, a failed run's rows), and the sweep of unreachable item sets, go
 * to a clean-up lane of their own, one at a time, beside the jobs: they delete only rows nothing
 * reads, so nothing waits for them, and a discovery or a build queued meanwhile starts at once
 * instead of after them (an apply's prune walks all of the tenant's content).
 */
export class StagingJobs {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** The clean-up lane: what waits, and the one in progress. */
  private cleanUps: CleanUp[] = [];
  private cleaning: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      runs: RunStorage;
      apply: ApplyStorage;
      keys: IdempotencyKeys;
      clock: Clock;
      logger: Logger;
      hooks?: StagingJobHooks | undefined;
      staleClaimMs?: number | undefined;
      sweepMs?: number | undefined;
    },
  ) {}

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.kick(), this.deps.sweepMs ?? DEFAULT_SWEEP_MS);
    this.timer.unref();
    this.kick();
  }

  /** Something may be waiting: look now (once more after the current pass, if one runs). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass().finally(() => {
      this.running = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        this.kick();
      }
    });
  }

  /**
   * Stops sweeping and waits for the job in progress, then for the clean-ups the jobs left (but
   * a prune or a sweep step still waiting: a later one does that work).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
    while (this.cleaning) await this.cleaning;
  }

  /**
   * Queues clean-up work in the lane (one at a time, in order), and returns at once. A failure
   * is logged: what it left is garbage nothing reads, and the sweep or a later apply's prune
   * takes it.
   */
  private cleanUp(cleanUp: CleanUp): void {
    if (cleanUp.key !== undefined)
      this.cleanUps = this.cleanUps.filter((queued) => queued.key !== cleanUp.key);
    this.cleanUps.push(cleanUp);
    if (this.cleaning) return;
    this.cleaning = (async () => {
      for (let next = this.cleanUps.shift(); next; next = this.cleanUps.shift()) {
        if (this.stopped && next.key !== undefined) continue;
        try {
          await next.work();
        } catch (error) {
          this.deps.logger.warn({ err: messageOf(error) }, `staging: ${next.what} failed; left for later`);
        }
      }
      this.cleaning = undefined;
    })();
  }

  /** Rows of item sets nobody points to any more (a snapshot's clean-up that failed or died): one step per pass. */
  private sweepSets(): void {
    if (this.cleanUps.some((queued) => queued.key === 'sweep')) return; // one waits already: it keeps its place
    this.cleanUp({
      what: 'the sweep of unreachable item sets',
      key: 'sweep',
      work: async () => {
        const dropped = await this.deps.runs.sweepItemSets();
        if (dropped > 0) this.deps.logger.info({ dropped }, 'staging: dropped unreachable item sets');
      },
    });
  }

  /** Idempotency-Keys past their 24 hours (data-plane.md §3.4): looked for every pass, off the request path. */
  private purgeKeys(): void {
    if (this.cleanUps.some((queued) => queued.key === 'keys')) return;
    this.cleanUp({
      what: 'the purge of expired Idempotency-Keys',
      key: 'keys',
      work: async () => {
        await this.deps.keys.purgeExpired();
      },
    });
  }

  private async pass(): Promise<void> {
    this.sweepSets();
    this.purgeKeys();
    try {
      const staleBefore = new Date(
        this.deps.clock.now().getTime() - (this.deps.staleClaimMs ?? DEFAULT_STALE_CLAIM_MS),
      );
      for (const pending of await this.deps.runs.pending()) {
        if (this.stopped) return;
        if (pending.status === 'applying') await this.build(pending.id, staleBefore);
        else if (pending.status === 'queued' && pending.claimedAt !== null) {
          // Its start is still copying its pinned set; failed if that start died.
          if (
            pending.claimedAt < staleBefore.getTime() &&
            (await this.deps.runs.abandonStart(pending.id, this.deps.clock.now(), staleBefore))
          )
            this.releaseFailedRun(pending.id);
        } else await this.discover(pending.id, staleBefore);
      }
    } catch (error) {
      this.deps.logger.warn(
        { err: messageOf(error) },
        'staging: could not look for pending runs; trying again',
      );
    }
  }

  private async discover(runId: string, staleBefore: Date): Promise<void> {
    const claimedAt = this.deps.clock.now();
    const run = await this.deps.runs.claimDiscovery(runId, claimedAt, staleBefore);
    if (!run) return; // another job has it, or it moved on
    const claim: JobClaim = { at: claimedAt.getTime() };
    try {
      // In chunks that yield (data-plane.md §5.4), each renewing the claim;
      // undefined: another job took the run.
      const counts = await this.deps.runs.diffInChunks(run, claim);
      if (!counts) return;
      await this.deps.hooks?.afterDiscovery?.(run);
      await this.deps.runs.completeDiscovery(run, claim, counts, this.deps.clock.now());
    } catch (error) {
      if (unavailable(error)) {
        await this.letGo(runId, 'running', claim);
        throw error;
      }
      this.deps.logger.error({ runId, err: messageOf(error) }, 'staging: discovery failed');
      if (await this.deps.runs.failDiscovery(run, claim, reasonOf(error), this.deps.clock.now()))
        this.releaseFailedRun(runId);
    }
  }

  /**
   * A job the store failed (unavailable) gives its claim back, so the next sweep takes the run
   * again at once instead of after the stale-claim time. When the store is still away, the claim
   * stays and goes stale as a dead job's does.
   */
  private async letGo(runId: string, status: 'running' | 'applying', claim: JobClaim): Promise<void> {
    await this.deps.runs.releaseClaim(runId, status, claim).catch(() => {});
  }

  /** A failed run's pinned set and changes, dropped in the clean-up lane. */
  private releaseFailedRun(runId: string): void {
    this.cleanUp({
      what: 'the clean-up of a failed run',
      work: () => this.deps.runs.releaseFailedRun(runId),
    });
  }

  /**
   * An ended apply's pinned set, then the tenant's content nobody refers to any more, in the
   * clean-up lane: the prune always comes after the drop (one still waiting moves behind it).
   */
  private releaseContent(run: RunRecord): void {
    this.cleanUp({
      what: 'the clean-up of an apply',
      work: () => this.deps.apply.releasePinnedSet(run),
    });
    this.cleanUp({
      what: 'the prune of content after an apply',
      key: `prune:${run.tenantId}`,
      work: () => this.deps.apply.pruneContent(run.tenantId),
    });
  }

  private async build(runId: string, staleBefore: Date): Promise<void> {
    const claimedAt = this.deps.clock.now();
    const run = await this.deps.apply.claimBuild(runId, claimedAt, staleBefore);
    if (!run) return;
    const claim: JobClaim = { at: claimedAt.getTime() };
    try {
      await this.deps.hooks?.beforeBuild?.(run);
      const applied = await this.deps.apply.publishGeneration(
        run,
        claim,
        this.deps.clock.now(),
        async (held) => {
          await this.deps.hooks?.beforeSwitch?.(held);
        },
      );
      if (applied) this.releaseContent(run);
    } catch (error) {
      if (unavailable(error)) {
        await this.letGo(runId, 'applying', claim);
        throw error;
      }
      this.deps.logger.error({ runId, err: messageOf(error) }, 'staging: the generation build failed');
      if (await this.deps.apply.failApply(run, claim, reasonOf(error), this.deps.clock.now()))
        this.releaseContent(run);
    }
  }
}

const unavailable = (error: unknown) => isKeyhookError(error) && error.code === 'unavailable';
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
/** What the run's `reason` and its event say: the message, never a stack. */
const reasonOf = (error: unknown) => messageOf(error).slice(0, 500);
