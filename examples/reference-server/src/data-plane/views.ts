import { pageSchema } from '@keyhook/core/http';
import { z } from 'zod';
import type { ChangeRecord, GenerationRecord, ItemRecord, RunRecord, SourceRecord } from './model.js';
import { CHANGES } from './schemas.js';

/**
 * The data plane's bodies as the OpenAPI document describes them. Each view function is typed
 * by its schema, so the document and what is sent cannot part ways.
 */
const instant = z.iso.datetime();
const generationNumber = z.number().int().min(1);

export const sourceViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  status: z.enum(['active', 'inactive']),
  activeGeneration: generationNumber.nullable().meta({ description: 'null before the first apply.' }),
  stagedRevision: z
    .number()
    .int()
    .meta({ description: 'Moves with every item write that changed something.' }),
  createdAt: instant,
  updatedAt: instant,
});

export const itemViewSchema = z.object({
  key: z.string(),
  title: z.string().nullable(),
  content: z.string(),
  url: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  contentHash: z.string().meta({ description: 'SHA-256 of the canonical fields: it decides `unchanged`.' }),
  createdAt: instant,
  updatedAt: instant,
});

const counts = z.object({
  added: z.number().int(),
  updated: z.number().int(),
  removed: z.number().int(),
  unchanged: z.number().int(),
});

export const runViewSchema = z.object({
  id: z.string(),
  sourceId: z.string(),
  status: z.enum([
    'queued',
    'running',
    'completed',
    'failed',
    'conflict',
    'applying',
    'applied',
    'apply_failed',
  ]),
  baseGeneration: generationNumber.nullable(),
  stagedRevision: z.number().int(),
  counts: counts.nullable().meta({ description: 'Set once discovery completed.' }),
  noop: z.boolean().nullable(),
  generation: generationNumber.nullable().meta({ description: "The generation this run's apply published." }),
  reason: z.string().nullable(),
  createdAt: instant,
  updatedAt: instant,
});

export const changeViewSchema = z.object({
  key: z.string(),
  change: z.enum(CHANGES),
  contentHash: z.string().nullable(),
  previousHash: z.string().nullable(),
});

export const generationViewSchema = z.object({
  number: generationNumber,
  runId: z.string(),
  itemCount: z.number().int(),
  passageCount: z.number().int(),
  active: z.boolean(),
  createdAt: instant,
});

type View<Schema extends z.ZodType> = z.output<Schema>;

export function sourceView(source: SourceRecord): View<typeof sourceViewSchema> {
  return {
    id: source.id,
    name: source.name,
    description: source.description,
    status: source.status,
    activeGeneration: source.activeGeneration === 0 ? null : source.activeGeneration,
    stagedRevision: source.stagedRevision,
    createdAt: source.createdAt.toISOString(),
    updatedAt: source.updatedAt.toISOString(),
  };
}

export function itemView(item: ItemRecord): View<typeof itemViewSchema> {
  return {
    key: item.key,
    title: item.title,
    content: item.content,
    url: item.url,
    metadata: item.metadata,
    contentHash: item.contentHash,
    createdAt: item.createdAt.toISOString(),
    updatedAt: item.updatedAt.toISOString(),
  };
}

export function runView(run: RunRecord): View<typeof runViewSchema> {
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
    createdAt: run.createdAt.toISOString(),
    updatedAt: run.updatedAt.toISOString(),
  };
}

export function changeView(change: ChangeRecord): View<typeof changeViewSchema> {
  return { ...change };
}

export function generationView(
  generation: GenerationRecord,
  activeGeneration: number,
): View<typeof generationViewSchema> {
  return {
    number: generation.number,
    runId: generation.runId,
    itemCount: generation.itemCount,
    passageCount: generation.passageCount,
    active: generation.number === activeGeneration,
    createdAt: generation.createdAt.toISOString(),
  };
}

const errorSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: z.array(z.record(z.string(), z.unknown())).optional(),
});

/** Each route's success body. */
export const responses = {
  source: z.object({ source: sourceViewSchema }),
  sources: pageSchema(sourceViewSchema),
  items: pageSchema(itemViewSchema),
  upserted: z.object({ result: z.enum(['created', 'updated', 'unchanged']), item: itemViewSchema }),
  batch: z.object({
    results: z.array(
      z.union([
        z.object({
          key: z.string(),
          result: z.enum(['created', 'updated', 'unchanged', 'deleted', 'not_found']),
        }),
        z.object({ key: z.string().nullable(), error: errorSchema }),
      ]),
    ),
  }),
  snapshot: z.object({
    source: sourceViewSchema,
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int(),
    removed: z.number().int(),
  }),
  run: z.object({ run: runViewSchema }),
  runs: pageSchema(runViewSchema),
  diff: pageSchema(changeViewSchema).extend({ run: runViewSchema }),
  generation: z.object({ generation: generationViewSchema }),
  generations: pageSchema(generationViewSchema),
} as const;
