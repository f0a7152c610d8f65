import type { Clock, TimerHandle, TimerOptions, Timers } from '@keyhook/core';

/** A clock that moves only when the test says so. */
export class FakeClock implements Clock {
  private current: number;

  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(ms: number): void {
    this.current += ms;
  }

  set(to: Date | string): void {
    this.current = new Date(to).getTime();
  }
}

interface VirtualTimer {
  at: number;
  /** Set order: timers due at the same moment run in it, as Node runs them. */
  order: number;
  /** An interval's period; undefined for a timeout. */
  every: number | undefined;
  callback: () => void;
}

/** Event-loop turns one settle() gives: each drains every pending microtask and the I/O already in. */
const SETTLE_TURNS = 5;

/**
 * A clock and the timers that run on it, for code that takes both (`createKeyhook({ ...TEST_CATALOG, clock,
 * timers })`): pass the same VirtualClock as each. Its time moves only in advance(), which runs
 * the timers that come due on the way, in order, letting the work each one starts settle before
 * the next. Nothing waits on the wall clock. Real I/O (HTTP to a test receiver) still takes real
 * time: wait for it with the receiver, not with advance().
 */
export class VirtualClock implements Clock, Timers {
  private current: number;
  private readonly pending = new Set<VirtualTimer>();
  private sequence = 0;

  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.current = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  // `unref` means nothing here: a virtual timer never keeps the process alive.
  setTimeout(callback: () => void, ms: number, _options?: TimerOptions): TimerHandle {
    return this.add(callback, ms, undefined);
  }

  setInterval(callback: () => void, ms: number, _options?: TimerOptions): TimerHandle {
    // At least a millisecond apart, so an interval cannot run forever inside one advance().
    return this.add(callback, ms, Math.max(1, delayOf(ms)));
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle !== undefined) this.pending.delete(handle as VirtualTimer);
  }

  clearInterval(handle: TimerHandle | undefined): void {
    this.clearTimeout(handle);
  }

  /**
   * Moves time forward by `ms`, running each timer as its moment comes (time stands at that
   * moment while it runs), and settling after each; resolves once time is `ms` later and what
   * the last timer started has settled.
   */
  async advance(ms: number): Promise<void> {
    const until = this.current + delayOf(ms);
    // Timers the work before this call is about to set are set first.
    await this.settle();
    for (let timer = this.nextDue(until); timer; timer = this.nextDue(until)) {
      this.current = Math.max(this.current, timer.at);
      if (timer.every === undefined) this.pending.delete(timer);
      else timer.at += timer.every;
      timer.callback();
      await this.settle();
    }
    this.current = until;
    await this.settle();
  }

  /**
   * Lets the work in progress run as far as it can without time moving: a few turns of the
   * event loop, each running every pending microtask. It does not wait for real I/O.
   */
  async settle(): Promise<void> {
    for (let turn = 0; turn < SETTLE_TURNS; turn++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  private add(callback: () => void, ms: number, every: number | undefined): VirtualTimer {
    const timer = { at: this.current + delayOf(ms), order: this.sequence++, every, callback };
    this.pending.add(timer);
    return timer;
  }

  private nextDue(until: number): VirtualTimer | undefined {
    let next: VirtualTimer | undefined;
    for (const timer of this.pending) {
      if (timer.at > until) continue;
      if (!next || timer.at < next.at || (timer.at === next.at && timer.order < next.order)) next = timer;
    }
    return next;
  }
}

/** A negative or NaN delay is none: that timer is due at once (the next advance(), even by 0). */
function delayOf(ms: number): number {
  return ms > 0 ? ms : 0;
}
