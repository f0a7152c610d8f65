import { MemoryStore } from '@keyhook/core';
import type { IdempotencyCompletion, RotateOutcome, WebhookRecord } from '@keyhook/core/store';

/**
 * Makes a race reproducible. The memory store answers within one microtask, so two
 * rotations sent together would run one after the other; held at the gate, both have read
 * the same hash before either writes, as on two app instances sharing a database.
 */
export class RotationGate {
  private expected = 0;
  private waiting: (() => void)[] = [];

  /** The next `count` rotations wait at the store until all of them have arrived. */
  hold(count: number): void {
    this.expected = count;
  }

  async arrive(): Promise<void> {
    if (this.expected === 0) return;
    await new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      if (this.waiting.length === this.expected) {
        this.expected = 0;
        for (const release of this.waiting.splice(0)) release();
      }
    });
  }
}

/** Holds the next webhook insert at the store until released: a create that is still in flight. */
export class InsertGate {
  private held: Promise<void> | null = null;
  private arrived: (() => void) | null = null;
  private failure: Error | null = null;

  /** The next insert throws `error`, as a database fault would. */
  failNext(error: Error): void {
    this.failure = error;
  }

  /** The next insert waits for the returned release; `reached` resolves once it is waiting. */
  holdNext(): { reached: Promise<void>; release: () => void } {
    let release: () => void = () => {};
    this.held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const reached = new Promise<void>((resolve) => {
      this.arrived = resolve;
    });
    return { reached, release };
  }

  async arrive(): Promise<void> {
    const failure = this.failure;
    this.failure = null;
    if (failure) throw failure;
    const held = this.held;
    if (!held) return;
    this.held = null;
    this.arrived?.();
    await held;
  }
}

/** The reference store, with its compare-and-set of the key hash and its webhook insert behind gates. */
export class GatedMemoryStore extends MemoryStore {
  constructor(
    private readonly gate: RotationGate,
    private readonly inserts: InsertGate = new InsertGate(),
  ) {
    super();
  }

  override async insertWebhook(
    record: WebhookRecord,
    completion?: IdempotencyCompletion,
  ): Promise<'inserted' | 'active_twin' | 'claim_lost'> {
    await this.inserts.arrive();
    return super.insertWebhook(record, completion);
  }

  override async rotateApiKey(
    tenantId: string,
    id: string,
    expectedHash: string,
    newHash: string,
  ): Promise<RotateOutcome> {
    await this.gate.arrive();
    return super.rotateApiKey(tenantId, id, expectedHash, newHash);
  }
}
