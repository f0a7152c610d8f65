import { REFERENCE_SCOPES, type Scope } from '../catalog.js';

export type { Scope };

/** The seven scope names, in their declared order. */
export const SCOPES: readonly Scope[] = REFERENCE_SCOPES.map((scope) => scope.name);

/** The data plane's operations (data-plane.md §3), each with the one scope that guards it. */
export const OPERATION_SCOPES = {
  'sources.list': 'sources:read',
  'sources.read': 'sources:read',
  'sources.create': 'sources:write',
  'sources.update': 'sources:write',
  'sources.deactivate': 'sources:write',
  'items.list': 'items:read',
  'items.upsert': 'items:write',
  'items.batch': 'items:write',
  'items.snapshot': 'items:write',
  'items.delete': 'items:write',
  'runs.read': 'runs:read',
  'runs.diff': 'runs:read',
  'generations.read': 'runs:read',
  'runs.start': 'runs:execute',
  'runs.apply': 'runs:apply',
} as const satisfies Record<string, Scope>;

export type Operation = keyof typeof OPERATION_SCOPES;

export function scopeFor(operation: Operation): Scope {
  return OPERATION_SCOPES[operation];
}
