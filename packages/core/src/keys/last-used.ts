import { type Clock, epochMs } from '../clock.js';
import type { Logger } from '../logger.js';
import type { Store } from '../store/types.js';

export const LAST_USED_INTERVAL_MS = 60_000;

/**
 * Records `lastUsedAt` off the request path: at most one store write per key per interval
 * from this process, and the store's conditional write keeps it to one across processes.
 */
export class LastUsedRecorder {
  private readonly lastWrite = new Map<string, number>();
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly intervalMs = LAST_USED_INTERVAL_MS,
  ) {}

  /** Never awaits the store and never throws: a failed write is logged and tried again later. */
  record(keyId: string, nowMs = epochMs(this.clock)): void {
    const previous = this.lastWrite.get(keyId);
    if (previous !== undefined && nowMs - previous < this.intervalMs) return;
    this.lastWrite.set(keyId, nowMs);
    const now = new Date(nowMs);
    if (this.lastWrite.size > 100_000) this.forgetOldest();
    const write = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.store.touchApiKey(keyId, now, this.intervalMs))
      .catch((error: unknown) => {
        this.lastWrite.delete(keyId);
        this.logger.warn({ err: error, keyId }, 'could not record lastUsedAt');
      })
      .finally(() => this.pending.delete(write));
    this.pending.add(write);
  }

  /** Waits for the writes already started (graceful shutdown, tests). */
  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  private forgetOldest(): void {
    // Maps iterate in insertion order: drop the oldest half to bound memory.
    let drop = this.lastWrite.size / 2;
    for (const key of this.lastWrite.keys()) {
      if (drop-- <= 0) break;
      this.lastWrite.delete(key);
    }
  }
}
