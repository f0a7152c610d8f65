import type { ErrorDetail } from '@keyhook/core';
import { errorEnvelope, type KeyhookResponse } from '@keyhook/core/http';

/**
 * The data plane's own refusals (data-plane.md §3.2), beside keyhook's codes, in the same
 * envelope. Every one is a 409: the request is well formed, the resource's state refuses it.
 */
export const STAGING_ERROR_STATUS = {
  /** Item writes and runs of a deactivated source. */
  source_inactive: 409,
  /** Applying a run whose base is no longer the active generation (Terraform's stale plan). */
  run_conflict: 409,
  /** Applying a run that has not completed discovery, or whose apply already started or ended. */
  run_not_ready: 409,
  /** Another run's apply holds the source: at most one apply per source at a time. */
  apply_in_progress: 409,
} as const;

export type StagingErrorCode = keyof typeof STAGING_ERROR_STATUS;

export class StagingError extends Error {
  readonly status: number;

  constructor(
    readonly code: StagingErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.name = 'StagingError';
    this.status = STAGING_ERROR_STATUS[code];
  }

  toResponse(): KeyhookResponse {
    return errorEnvelope(this.status, this.code, this.message, this.details);
  }
}
