import type { ReferenceEvent } from '../catalog.js';

import type { ChangeCounts, RunRecord } from './model.js';

/**
 * The data plane's events (data-plane.md §2.2), each naming the source,
 * the run, the generation and the reason. Ids are derived from the run, so a job that runs again
 * after a crash publishes the same event id, and keyhook's idempotency on `id` keeps it to one.
 */
type EventOf<Type extends ReferenceEvent['type']> = Extract<ReferenceEvent, { type: Type }>;

/** An event of `type` about `run`: the catalog's schema of that type (src/catalog.ts) types `data`. */
function event<Type extends ReferenceEvent['type']>(
  run: RunRecord,
  kind: string,
  type: Type,
  data: Omit<EventOf<Type>['data'], 'sourceId' | 'runId'>,
): EventOf<Type> {
  return {
    tenantId: run.tenantId,
    type,
    id: `evt_${run.id}_${kind}`,
    data: { sourceId: run.sourceId, runId: run.id, ...data },
  } as unknown as EventOf<Type>;
}

const generationOf = (number: number) => (number === 0 ? null : number);

export function runCompleted(run: RunRecord, counts: ChangeCounts, noop: boolean): ReferenceEvent {
  return event(run, 'completed', 'run.completed', {
    baseGeneration: generationOf(run.baseGeneration),
    stagedRevision: run.stagedRevision,
    noop,
    counts,
  });
}

export function runFailed(run: RunRecord, reason: string): ReferenceEvent {
  return event(run, 'failed', 'run.failed', { baseGeneration: generationOf(run.baseGeneration), reason });
}

export function runConflicted(run: RunRecord, activeGeneration: number, reason: string): ReferenceEvent {
  return event(run, 'conflict', 'run.conflict', {
    baseGeneration: generationOf(run.baseGeneration),
    activeGeneration: generationOf(activeGeneration),
    reason,
  });
}

export function generationPublished(
  run: RunRecord,
  generation: number,
  counts: { items: number; passages: number },
): ReferenceEvent {
  return event(run, 'published', 'generation.published', {
    generation,
    previousGeneration: generationOf(run.baseGeneration),
    changes: run.counts,
    items: counts.items,
    passages: counts.passages,
  });
}

export function applyFailed(run: RunRecord, reason: string): ReferenceEvent {
  return event(run, 'apply_failed', 'apply.failed', {
    baseGeneration: generationOf(run.baseGeneration),
    reason,
  });
}
