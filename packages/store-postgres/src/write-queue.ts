import type { AttemptCompletion, PublishOutcome } from '@keyhook/core/store';
import { Batcher } from './group-commit.js';
import {
  completeSucceeded,
  completeSucceededBatch,
  type SuccessOutcome,
} from './operations/complete-attempt.js';
import { type PublishCall, publishOn } from './operations/publish-event.js';
import type { StoreContext } from './store-context.js';

/** Publishes and successes written by one statement at most. */
const WRITE_BATCH = 64;

/** What waits for the store's next write statement: a publish or a success to record. */
export type WriteCall =
  | { kind: 'publish'; call: PublishCall }
  | { kind: 'success'; completion: AttemptCompletion };

export type WriteQueue = Batcher<WriteCall, PublishOutcome | SuccessOutcome>;

/**
 * The store's group commit of publishEvent and completeAttempt (a success): calls wait while one
 * statement of them is in flight, and go together next, in one statement of their kind, or of
 * both (publishEvent's publishAndSucceed). A publish waits only behind other publishes: with none
 * in flight or waiting, it goes at once beside a statement of successes (docs/decisions.md §8.19).
 */
export function writeQueue(ctx: StoreContext): WriteQueue {
  return new Batcher<WriteCall, PublishOutcome | SuccessOutcome>(
    (calls) => writeBatch(ctx, calls),
    (call) => writeOne(ctx, call),
    WRITE_BATCH,
    (call) =>
      call.kind === 'publish'
        ? `p\u0000${call.call.event.tenantId}\u0000${call.call.event.id}`
        : `s\u0000${call.completion.deliveryId}`,
    (call) => call.kind === 'publish',
  );
}

/** A batch of the writes queue: its publishes and its successes, each kind in one statement or both in one. */
async function writeBatch(
  ctx: StoreContext,
  calls: WriteCall[],
): Promise<(PublishOutcome | SuccessOutcome)[]> {
  const publishes: PublishCall[] = [];
  const completions: AttemptCompletion[] = [];
  for (const call of calls) {
    if (call.kind === 'publish') publishes.push(call.call);
    else completions.push(call.completion);
  }
  let published: PublishOutcome[] = [];
  let succeeded: SuccessOutcome[] = [];
  if (publishes.length === 0) succeeded = await completeSucceededBatch(ctx, completions);
  else [published, succeeded] = await publishOn(ctx, ctx.pool, publishes, completions);
  let p = 0;
  let k = 0;
  return calls.map((call) => (call.kind === 'publish' ? published[p++]! : succeeded[k++]!));
}

async function writeOne(ctx: StoreContext, call: WriteCall): Promise<PublishOutcome | SuccessOutcome> {
  if (call.kind === 'success') return completeSucceeded(ctx, call.completion);
  const [[outcome]] = await publishOn(ctx, ctx.pool, [call.call]);
  return outcome!;
}
