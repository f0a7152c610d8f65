/**
 * Group commit for one kind of statement: calls that arrive while a batch is in flight wait and
 * go together as the next one. An idle store sends each call at once, so a batch adds no
 * latency; a busy one sends one statement (one round trip, one commit) for many. When a batch
 * fails, each of its calls is tried alone, so one bad call fails only itself.
 */
export class Batcher<In, Out> {
  private queue: { input: In; resolve: (out: Out) => void; reject: (error: unknown) => void }[] = [];
  private draining = false;

  /**
   * `key`, when given, keeps two calls with one key out of one batch: the later waits for the
   * next (a statement cannot tell two writes of one row apart).
   */
  constructor(
    private readonly runBatch: (inputs: In[]) => Promise<Out[]>,
    private readonly runOne: (input: In) => Promise<Out>,
    private readonly maxBatch: number,
    private readonly key?: (input: In) => string,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    while (this.queue.length > 0) {
      const batch = this.take();
      if (batch.length === 1) {
        const [call] = batch;
        await this.runOne(call!.input).then(call!.resolve, call!.reject);
        continue;
      }
      try {
        const outputs = await this.runBatch(batch.map((call) => call.input));
        for (const [index, call] of batch.entries()) call.resolve(outputs[index]!);
      } catch {
        // One statement is all or nothing: trying each alone writes nothing twice.
        for (const call of batch) await this.runOne(call.input).then(call.resolve, call.reject);
      }
    }
    this.draining = false;
  }

  /** The next batch: the oldest calls, at most maxBatch, no two with one key; the rest keep their order. */
  private take(): Batcher<In, Out>['queue'] {
    const key = this.key;
    if (key === undefined) return this.queue.splice(0, this.maxBatch);
    const batch: Batcher<In, Out>['queue'] = [];
    const rest: Batcher<In, Out>['queue'] = [];
    const keys = new Set<string>();
    for (const call of this.queue) {
      const k = key(call.input);
      if (batch.length < this.maxBatch && !keys.has(k)) {
        keys.add(k);
        batch.push(call);
      } else {
        rest.push(call);
      }
    }
    this.queue = rest;
    return batch;
  }
}
