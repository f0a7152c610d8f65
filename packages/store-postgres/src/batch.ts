/**
 * Group commit for one kind of statement: calls that arrive while a batch is in flight wait and
 * go together as the next one. An idle store sends each call at once, so a batch adds no
 * latency; a busy one sends one statement (one round trip, one commit) for many. When a batch
 * fails, each of its calls is tried alone, so one bad call fails only itself.
 */
export class Batcher<In, Out> {
  private queue: { input: In; resolve: (out: Out) => void; reject: (error: unknown) => void }[] = [];
  private draining = false;

  constructor(
    private readonly runBatch: (inputs: In[]) => Promise<Out[]>,
    private readonly runOne: (input: In) => Promise<Out>,
    private readonly maxBatch: number,
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
      const batch = this.queue.splice(0, this.maxBatch);
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
}
