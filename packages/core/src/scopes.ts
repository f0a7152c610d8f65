/** The seven scopes of spec §5, in the spec's order. */
export const SCOPES = [
  'sources:read',
  'sources:write',
  'items:read',
  'items:write',
  'runs:read',
  'runs:execute',
  'runs:apply',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (SCOPES as readonly string[]).includes(value);
}

/** Spec §4, data-plane operations: each operation and the one scope that guards it. */
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
