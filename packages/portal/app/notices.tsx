import type { ApiError } from './api-client.js';

/** What an action did, read out by screen readers as it changes. */
export function StatusLine({ message }: { message: string }) {
  return (
    <p role="status" class="status-line">
      {message}
    </p>
  );
}

/** A refusal's message, as the API's envelope gave it. */
export function ErrorNotice({ error }: { error: ApiError | null | undefined }) {
  if (!error) return null;
  return (
    <p role="alert" class="error-notice">
      {error.message}
    </p>
  );
}

/** Shown while a list loads for the first time. */
export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-busy="true">
      Loading {what}…
    </p>
  );
}
