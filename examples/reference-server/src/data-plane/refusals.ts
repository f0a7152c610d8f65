import { KeyhookError } from '@keyhook/core';
import { StagingError } from './errors.js';

const ID = /^[a-z]{2,3}_[0-9a-hjkmnp-tv-z]{26}$/;

/** Ids shaped like the ones this server mints; anything else cannot exist and is a 404 at once. */
export const isSourceId = (id: string) => id.startsWith('src_') && ID.test(id);
export const isRunId = (id: string) => id.startsWith('run_') && ID.test(id);

export const sourceNotFound = () => new KeyhookError('not_found', 'No source with that id.');
export const runNotFound = () => new KeyhookError('not_found', 'No run with that id in this source.');

/** A storage outcome that says the source is not the tenant's (404) or is inactive (409). */
export function refuseSource(outcome: { outcome: string }): void {
  if (outcome.outcome === 'source_not_found') throw sourceNotFound();
  if (outcome.outcome === 'source_inactive') {
    throw new StagingError('source_inactive', 'The source is inactive: its items and runs are read-only.');
  }
}
