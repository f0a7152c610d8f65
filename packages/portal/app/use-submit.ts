import { useState } from 'preact/hooks';
import { ApiError } from './api-client.js';

/** A thrown value as the pages show it: the envelope's error, or a plain one for anything else. */
export function asApiError(caught: unknown): ApiError {
  return caught instanceof ApiError
    ? caught
    : new ApiError(0, 'unexpected', 'Something went wrong. Reload the page.');
}

/** One action of a form or dialog: busy while it runs, and the envelope's error when it fails. */
export interface Submission {
  busy: boolean;
  error: ApiError | null;
  /** Clears the error, runs `action`, and keeps what it throws as the error. */
  run: (action: () => Promise<void>) => Promise<void>;
}

export function useSubmit(): Submission {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (caught) {
      setError(asApiError(caught));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}
