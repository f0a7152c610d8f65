import { validationFailed } from '../validation.js';

/** Deeper than any request keyhook takes; a fingerprint never recurses past it. */
export const MAX_JSON_DEPTH = 64;

/**
 * JSON with every object's keys sorted, at every depth: two bodies that differ only in key
 * order or whitespace have one canonical form. Array order is kept (it can carry meaning).
 * A body nested deeper than MAX_JSON_DEPTH is a 400, not a stack overflow.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value, 0));
}

function sortKeys(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_JSON_DEPTH) {
    throw validationFailed([{ path: '', message: `the body nests deeper than ${MAX_JSON_DEPTH} levels` }]);
  }
  if (Array.isArray(value)) return value.map((item) => sortKeys(item, depth + 1));
  // No prototype: a "__proto__" key is an ordinary key here, as JSON.parse made it.
  const sorted: Record<string, unknown> = Object.create(null);
  for (const key of Object.keys(value).sort()) {
    sorted[key] = sortKeys((value as Record<string, unknown>)[key], depth + 1);
  }
  return sorted;
}
