import type { EventDefinition, Keyhook, PublishInput, ScopeNameOf } from '@keyhook/core';

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

/** The five events the data plane publishes (data-plane.md §2.2; data-plane/events.ts). */
export const REFERENCE_EVENTS = {
  'run.completed': { description: 'A run finished discovery successfully.' },
  'run.failed': { description: 'A run failed.' },
  'run.conflict': { description: 'A run could not proceed because of a conflicting base.' },
  'generation.published': { description: 'An apply published a new generation.' },
  'apply.failed': { description: 'An apply failed to build or publish.' },
} as const satisfies Record<string, EventDefinition>;

/** The spec's two delivery header names. */
export const REFERENCE_HEADERS = { signature: 'x-chatbot-signature', eventId: 'x-chatbot-event-id' } as const;

export type Scope = ScopeNameOf<typeof REFERENCE_SCOPES>;

/** The keyhook this server builds, typed by its catalog. */
export type ReferenceKeyhook = Keyhook<Scope, typeof REFERENCE_EVENTS>;

/** An event of this server's catalog, as the data plane publishes it. */
export type ReferenceEvent = PublishInput<typeof REFERENCE_EVENTS>;
