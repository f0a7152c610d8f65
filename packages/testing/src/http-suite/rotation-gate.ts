import { MemoryStore, type RotateOutcome } from '@keyhook/core';

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

/** The reference store, with its compare-and-set of the key hash behind the gate. */
export class GatedMemoryStore extends MemoryStore {
  constructor(private readonly gate: RotationGate) {
    super();
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
