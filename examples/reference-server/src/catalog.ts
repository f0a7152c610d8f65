import type { EventDefinition, Keyhook, PublishInput, ScopeNameOf } from '@keyhook/core';
import { z } from 'zod';

/*
 * This server's configuration of keyhook, passed to createKeyhook like any host's: core has no
 * scopes, events or header names of its own (docs/decisions.md §3.13). These are the spec's.
 */

/** The seven scopes (data-plane.md §2.1), each guarding its operations (data-plane/operation-scopes.ts). */
export const REFERENCE_SCOPES = [
  { name: 'sources:read', description: 'List / read sources' },
  { name: 'sources:write', description: 'Create / update / deactivate sources' },
  { name: 'items:read', description: 'List staged items' },
  { name: 'items:write', description: 'Upsert / batch / snapshot / delete items' },
  { name: 'runs:read', description: 'Read run status, diff and active generation' },
  { name: 'runs:execute', description: 'Start a run' },
  { name: 'runs:apply', description: 'Apply (publish) a run' },
] as const;

/*
 * What each event's data holds (data-plane/events.ts builds it): the catalog page and the OpenAPI
 * document show each field with its type and description, and a test event starts from the example.
 * Loose objects: a receiver ignores a field it does not know, so one added later breaks nobody.
 */
const run = {
  sourceId: z.string().meta({ description: 'The source the run is of (src_…).' }),
  runId: z.string().meta({ description: 'The run (run_…).' }),
};
const baseGeneration = z.int().nullable().meta({
  description: 'The generation the run was diffed against: active when it started; null before the first.',
});
const reason = z.string().meta({ description: 'Why, in plain words.' });
const changeCounts = z
  .object({
    added: z.int().meta({ description: 'Items new in this run.' }),
    updated: z.int().meta({ description: 'Items whose content changed.' }),
    removed: z.int().meta({ description: 'Items gone since the base generation.' }),
    unchanged: z.int().meta({ description: 'Items as they were.' }),
  })
  .meta({ description: 'What the run changes, item by item.' });
const example = { sourceId: 'src_01jbz3k6m2ne4n2c9h2x0t5b7q', runId: 'run_01jbz3n1r8wd2y0f6k3p5c7e9a' };

/** The five events the data plane publishes (data-plane.md §2.2; data-plane/events.ts). */
export const REFERENCE_EVENTS = {
  'run.completed': {
    description: 'A run finished discovery successfully: its changes can be read and applied.',
    data: z.looseObject({
      ...run,
      baseGeneration,
      stagedRevision: z.int().meta({ description: 'The staged revision the run read.' }),
      noop: z
        .boolean()
        .meta({ description: 'True when the run changes nothing: applying it publishes no generation.' }),
      counts: changeCounts,
    }),
    example: {
      ...example,
      baseGeneration: 3,
      stagedRevision: 42,
      noop: false,
      counts: { added: 12, updated: 3, removed: 1, unchanged: 240 },
    },
  },
  'run.failed': {
    description: 'A run failed: discovery stopped, or its job was abandoned.',
    data: z.looseObject({ ...run, baseGeneration, reason }),
    example: { ...example, baseGeneration: 3, reason: 'discovery timed out after 900 s' },
  },
  'run.conflict': {
    description: 'A run could not proceed: its base generation is no longer the active one.',
    data: z.looseObject({
      ...run,
      baseGeneration,
      activeGeneration: z.int().nullable().meta({ description: 'The generation active now.' }),
      reason,
    }),
    example: {
      ...example,
      baseGeneration: 3,
      activeGeneration: 4,
      reason: 'generation 4 was published after this run started from 3',
    },
  },
  'generation.published': {
    description: 'An apply published a new generation: it is the active one now.',
    data: z.looseObject({
      ...run,
      generation: z.int().meta({ description: 'The new active generation.' }),
      previousGeneration: z
        .int()
        .nullable()
        .meta({ description: 'The generation it replaced; null for the first.' }),
      changes: changeCounts.nullable(),
      items: z.int().meta({ description: 'Items in the new generation.' }),
      passages: z.int().meta({ description: 'Passages in the new generation.' }),
    }),
    example: {
      ...example,
      generation: 4,
      previousGeneration: 3,
      changes: { added: 12, updated: 3, removed: 1, unchanged: 240 },
      items: 254,
      passages: 1_870,
    },
  },
  'apply.failed': {
    description: 'An apply failed to build or publish: the active generation is unchanged.',
    data: z.looseObject({ ...run, baseGeneration, reason }),
    example: { ...example, baseGeneration: 3, reason: 'the build of generation 4 failed: out of disk space' },
  },
} as const satisfies Record<string, EventDefinition>;

/** The spec's two delivery header names. */
export const REFERENCE_HEADERS = { signature: 'x-chatbot-signature', eventId: 'x-chatbot-event-id' } as const;

export type Scope = ScopeNameOf<typeof REFERENCE_SCOPES>;

/** The keyhook this server builds, typed by its catalog. */
export type ReferenceKeyhook = Keyhook<Scope, typeof REFERENCE_EVENTS>;

/** An event of this server's catalog, as the data plane publishes it. */
export type ReferenceEvent = PublishInput<typeof REFERENCE_EVENTS>;
