/**
 * The seven scopes of the reference server, in the order of docs/http-api.md §5.4: the default
 * catalog's names.
 */
export const SCOPES = [
  'sources:read',
  'sources:write',
  'items:read',
  'items:write',
  'runs:read',
  'runs:execute',
  'runs:apply',
] as const;
