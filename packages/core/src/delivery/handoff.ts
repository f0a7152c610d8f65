import { type Clock, epochMs, type RandomBytes } from '../clock.js';
import type { LeasedDelivery } from '../store/types.js';
import type { DeliveryHandoff } from './publish.js';

/**
 * Deliveries of one publish handed to a worker in the publish itself. Most events have one
 * subscriber; more would hold room that concurrent publishes could use. The others are written
 * pending and leased as usual.
 */
export const HANDOFF_LIMIT = 1;

export interface HandoffDeps {
  clock: Clock;
  randomBytes: RandomBytes;
  /** Attempts the worker runs at once. As many handed-over deliveries may wait beside them. */
  concurrency: number;
  leaseMs: number;
  timeoutMs: number;
  /** Attempts running now, deliveries the worker's own lease may still bring, and those waiting for their endpoint's slot. */
  busy(): number;
  /**
   * Deliveries were handed over and wait in `next()`: start what the free slots take, in a later
   * turn of the event loop, so the publish answers its caller first.
   */
  handedOver(): void;
  /** Room promised to a publish came back unused. */
  roomReturned(): void;
  /** A publish failed after it may have written its lease (its answer lost): the next claim ends it. */
  leaseLost(leaseId: string): void;
}

/**
 * The worker's side of the publish handoff (DeliveryHandoff): room set aside for publishes in
 * progress, and the deliveries they handed over that wait for a free slot. A publish finds room
 * while fewer than `concurrency` attempts run and wait beyond those running, so a busy worker
 * still takes the next deliveries without a lease query; the wait is bounded, and a delivery
 * that could no longer finish its attempt inside its lease is left to the lease's expiry, when
 * any worker takes it.
 */
export class Handoffs {
  private reserved = 0;
  private readonly waiting: LeasedDelivery[] = [];
  private settled: (() => void) | undefined;

  constructor(private readonly deps: HandoffDeps) {}

  /** Promised or waiting: room the worker's own lease must leave. */
  get pending(): number {
    return this.reserved + this.waiting.length;
  }

  reserve(): DeliveryHandoff | undefined {
    const room = 2 * this.deps.concurrency - this.deps.busy() - this.pending;
    const limit = Math.min(HANDOFF_LIMIT, room);
    if (limit <= 0) return undefined;
    this.reserved += limit;
    let open = true;
    const settle = () => {
      if (!open) return false;
      open = false;
      this.reserved -= limit;
      if (this.reserved === 0) this.settled?.();
      return true;
    };
    const lease = { limit, leaseId: leaseIdFrom(this.deps.randomBytes), leaseMs: this.deps.leaseMs };
    return {
      lease,
      accept: (leased) => {
        if (!settle()) return;
        this.waiting.push(...leased);
        if (leased.length > 0) this.deps.handedOver();
        if (leased.length < limit) this.deps.roomReturned();
      },
      release: () => {
        if (settle()) this.deps.roomReturned();
      },
      lost: () => {
        if (!settle()) return;
        this.deps.roomReturned();
        this.deps.leaseLost(lease.leaseId);
      },
    };
  }

  /**
   * The longest-waiting delivery whose attempt can still end inside its lease (a later one is
   * left to that lease's expiry), or undefined.
   */
  next(): LeasedDelivery | undefined {
    const latestStart = epochMs(this.deps.clock) + this.deps.timeoutMs;
    for (let delivery = this.waiting.shift(); delivery; delivery = this.waiting.shift()) {
      if (delivery.delivery.dueAt!.getTime() > latestStart) return delivery;
    }
    return undefined;
  }

  /** Resolves when no publish holds room any more: its handover has come or will not. */
  async allSettled(): Promise<void> {
    if (this.reserved === 0) return;
    await new Promise<void>((resolve) => {
      this.settled = resolve;
    });
    this.settled = undefined;
  }
}

export function leaseIdFrom(randomBytes: RandomBytes): string {
  return Buffer.from(randomBytes(12)).toString('hex');
}
