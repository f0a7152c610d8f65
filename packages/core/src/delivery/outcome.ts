import { attemptSucceeded } from './rules.js';
import { parseRetryAfter } from './schedule.js';

/** What one attempt came to, as the sender saw it. */
export type AttemptResult =
  | { kind: 'response'; status: number; retryAfter?: string | null | undefined }
  /** Timeout, refused connection, DNS failure, a refused address, TLS error. */
  | { kind: 'error'; message: string };

export type AttemptVerdict =
  | { verdict: 'succeeded' }
  /** 410 Gone: the receiver says the endpoint is gone for good (docs/decisions.md §8.5). */
  | { verdict: 'failed_permanently' }
  | { verdict: 'retry'; retryAfterMs: number | null };

/**
 * An attempt (docs/decisions.md §8.5): a 2xx succeeds; anything else fails, and 3xx counts as a failure
 * because redirects are never followed. Only 429 and 503 may carry a Retry-After we honour.
 */
export function judgeAttempt(result: AttemptResult, now: Date): AttemptVerdict {
  if (result.kind === 'error') return { verdict: 'retry', retryAfterMs: null };
  if (attemptSucceeded(result.status)) return { verdict: 'succeeded' };
  if (result.status === 410) return { verdict: 'failed_permanently' };
  const honoured = result.status === 429 || result.status === 503;
  return { verdict: 'retry', retryAfterMs: honoured ? parseRetryAfter(result.retryAfter, now) : null };
}
