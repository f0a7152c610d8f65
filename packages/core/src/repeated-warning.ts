import type { Clock } from './clock.js';
import type { Logger } from './logger.js';

/** How often a warning that keeps repeating is logged again, with how many came meanwhile. */
export const REPEAT_WARNING_EVERY_MS = 10_000;

/**
 * A warning that repeats while one condition lasts, such as a store out of reach: logged the first
 * time at once, then at most once per `everyMs` with `repeated`, the number that came since the
 * last line. `over` logs once at `info` that the condition ended, and the next warning is logged
 * at once again. A few lines an outage, never one per request or per retry (docs/decisions.md §8.9).
 */
export class RepeatedWarning {
  /** Warnings since the condition began. */
  private count = 0;
  private unlogged = 0;
  private loggedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly everyMs = REPEAT_WARNING_EVERY_MS,
  ) {}

  /** Warnings since the condition began; 0 when it is not on. */
  get active(): number {
    return this.count;
  }

  warn(context: object, message: string): void {
    this.count++;
    const now = this.clock.now().getTime();
    if (this.count > 1 && now - this.loggedAt < this.everyMs) {
      this.unlogged++;
      return;
    }
    this.logger.warn(this.unlogged > 0 ? { ...context, repeated: this.unlogged } : context, message);
    this.loggedAt = now;
    this.unlogged = 0;
  }

  /** The condition ended: says so once, with how many warnings it gave, when there were any. */
  over(message: string): void {
    if (this.count === 0) return;
    this.logger.info({ failures: this.count }, message);
    this.count = 0;
    this.unlogged = 0;
    this.loggedAt = Number.NEGATIVE_INFINITY;
  }
}
