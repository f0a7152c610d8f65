import { REFERENCE_EVENTS } from '../src/catalog.js';

/** The catalog's example `data` of run.completed, with `extra` over it: what a test publishes. */
export const runCompletedData = (extra: Record<string, unknown> = {}) => ({
  ...REFERENCE_EVENTS['run.completed'].example,
  ...extra,
});

/** The same for run.failed. */
export const runFailedData = (extra: Record<string, unknown> = {}) => ({
  ...REFERENCE_EVENTS['run.failed'].example,
  ...extra,
});
