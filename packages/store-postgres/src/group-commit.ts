type Call<In, Out> = { input: In; resolve: (out: Out) => void; reject: (error: unknown) => void };

/**
 * Group commit for one kind of statement: calls that arrive while a batch is in flight wait and
 * go together as the next one. An idle store sends each call at once, so a batch adds no
 * latency; a busy one sends one statement (one round trip, one commit) for many. When a batch
 * fails, each of its calls is tried alone, so one bad call fails only itself.
 *
 * `urgent`, when given, picks calls that wait only behind a batch that carries some of them
 * (docs/decisions.md §8.19): while the statement in flight carries none, a second one goes at
 * once with the urgent calls first. So at most two statements are in flight, at most one
 * without an urgent call, and urgent calls that arrive together still go as one batch.
 */
export class Batcher<In, Out> {
  private queue: Call<In, Out>[] = [];
  /** Statements in flight (at most two), and how many of them carry an urgent call. */
  private inFlight = 0;
  private urgentInFlight = 0;

  /**
   * `key`, when given, keeps two calls with one key out of one batch: the later waits for the
   * next (a statement cannot tell two writes of one row apart).
   */
  constructor(
    private readonly runBatch: (inputs: In[]) => Promise<Out[]>,
    private readonly runOne: (input: In) => Promise<Out>,
    private readonly maxBatch: number,
    private readonly key?: (input: In) => string,
    private readonly urgent?: (input: In) => boolean,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      const batch = this.next();
      if (batch.length > 0) void this.lane(batch);
    });
  }

  /**
   * What a free lane sends next: anything waiting when nothing else is in flight; beside a
   * statement without urgent calls, the waiting calls urgent first, when one is urgent; else none.
   */
  private next(): Call<In, Out>[] {
    if (this.queue.length === 0) return [];
    if (this.inFlight === 0) return this.take(false);
    const urgent = this.urgent;
    if (urgent === undefined || this.inFlight > 1 || this.urgentInFlight > 0) return [];
    return this.queue.some((call) => urgent(call.input)) ? this.take(true) : [];
  }

  /** Sends `batch`, then what waits, for as long as next() gives it something. */
  private async lane(first: Call<In, Out>[]): Promise<void> {
    for (let batch = first; batch.length > 0; batch = this.next()) {
      const urgent = this.urgent;
      const carriesUrgent = urgent !== undefined && batch.some((call) => urgent(call.input));
      this.inFlight++;
      if (carriesUrgent) this.urgentInFlight++;
      await this.send(batch);
      this.inFlight--;
      if (carriesUrgent) this.urgentInFlight--;
    }
  }

  /** One batch; settles each of its calls and never throws. */
  private async send(batch: Call<In, Out>[]): Promise<void> {
    if (batch.length === 1) {
      const [call] = batch;
      await this.runOne(call!.input).then(call!.resolve, call!.reject);
      return;
    }
    try {
      const outputs = await this.runBatch(batch.map((call) => call.input));
      for (const [index, call] of batch.entries()) call.resolve(outputs[index]!);
    } catch {
      // One statement is all or nothing: trying each alone writes nothing twice.
      for (const call of batch) await this.runOne(call.input).then(call.resolve, call.reject);
    }
  }

  /**
   * The next batch: the oldest calls (`urgentFirst`: the urgent ones before the others), at most
   * maxBatch, no two with one key; the rest keep their order.
   */
  private take(urgentFirst: boolean): Call<In, Out>[] {
    const { urgent, key } = this;
    const order =
      urgentFirst && urgent !== undefined
        ? [
            ...this.queue.filter((call) => urgent(call.input)),
            ...this.queue.filter((call) => !urgent(call.input)),
          ]
        : this.queue;
    const batch: Call<In, Out>[] = [];
    const keys = new Set<string>();
    for (const call of order) {
      if (batch.length === this.maxBatch) break;
      const k = key?.(call.input);
      if (k !== undefined && keys.has(k)) continue;
      if (k !== undefined) keys.add(k);
      batch.push(call);
    }
    const taken = new Set(batch);
    this.queue = this.queue.filter((call) => !taken.has(call));
    return batch;
  }
}
