import type { ChangeRecord, GenerationRecord, ItemRecord, RunRecord, SourceRecord } from './model.js';

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export function sourceView(source: SourceRecord) {
  return {
    id: source.id,
    name: source.name,
    description: source.description,
    status: source.status,
    activeGeneration: source.activeGeneration === 0 ? null : source.activeGeneration,
    stagedRevision: source.stagedRevision,
    createdAt: iso(source.createdAt),
    updatedAt: iso(source.updatedAt),
  };
}

export function itemView(item: ItemRecord) {
  return {
    key: item.key,
    title: item.title,
    content: item.content,
    url: item.url,
    metadata: item.metadata,
    contentHash: item.contentHash,
    createdAt: iso(item.createdAt),
    updatedAt: iso(item.updatedAt),
  };
}

export function runView(run: RunRecord) {
  return {
    id: run.id,
    sourceId: run.sourceId,
    status: run.status,
    baseGeneration: run.baseGeneration === 0 ? null : run.baseGeneration,
    stagedRevision: run.stagedRevision,
    counts: run.counts,
    noop: run.noop,
    generation: run.generation,
    reason: run.reason,
    createdAt: iso(run.createdAt),
    updatedAt: iso(run.updatedAt),
  };
}

export function changeView(change: ChangeRecord) {
  return { ...change };
}

export function generationView(generation: GenerationRecord, activeGeneration: number) {
  return {
    number: generation.number,
    runId: generation.runId,
    itemCount: generation.itemCount,
    passageCount: generation.passageCount,
    active: generation.number === activeGeneration,
    createdAt: iso(generation.createdAt),
  };
}
