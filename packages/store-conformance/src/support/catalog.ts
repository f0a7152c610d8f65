import type { EventCatalog } from '@keyhook/core';

/*
 * What the tests declare, as any host declares its own: core has no scopes or events of its own
 * (docs/decisions.md §3.13). The names are the spec's, so a test reads like the HTTP contract.
 */

export const TEST_SCOPES = [
  'sources:read',
  'sources:write',
  'items:read',
  'items:write',
  'runs:read',
  'runs:execute',
  'runs:apply',
] as const;

export const TEST_EVENTS = {
  'run.completed': {},
  'run.failed': {},
  'run.conflict': {},
  'generation.published': {},
  'apply.failed': {},
} as const satisfies EventCatalog;

/** Spread into `createKeyhook({ ...TEST_CATALOG, … })`. */
export const TEST_CATALOG = { scopes: TEST_SCOPES, eventCatalog: TEST_EVENTS } as const;
