import { useState } from 'preact/hooks';
import type { ApiClient } from './api-client.js';
import type { PortalSessionView } from './api-types.js';
import { ErrorNotice } from './notices.js';
import { keepStandingSession, switchSession } from './session-start.js';
import { asApiError } from './use-submit.js';

/**
 * A link of another account than the one this browser has open: nothing changes until the person
 * chooses (docs/decisions.md §22.14). Switching ends nothing; staying ends the link's new session.
 */
export function ChooseAccountPage({
  api,
  current,
  next,
  brandName,
  onChosen,
  onFailed,
}: {
  api: ApiClient;
  current: PortalSessionView;
  next: PortalSessionView;
  brandName: string | null;
  onChosen: (session: PortalSessionView) => void;
  onFailed: (message: string) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ReturnType<typeof asApiError> | null>(null);
  const choose = async (choice: () => Promise<PortalSessionView>) => {
    setBusy(true);
    try {
      onChosen(await choice());
    } catch (caught) {
      const refusal = asApiError(caught);
      if (refusal.status === 401) onFailed(refusal.message);
      else setError(refusal);
      setBusy(false);
    }
  };
  return (
    <main id="main" class="ended">
      <h1>Switch to account {next.tenantId}?</h1>
      <p>
        This browser has {brandName ? `${brandName}’s` : 'the'} portal open for account{' '}
        <strong class="mono">{current.tenantId}</strong>. The link you opened is for account{' '}
        <strong class="mono">{next.tenantId}</strong>.
      </p>
      <p>
        Switch only if you expected a link for <span class="mono">{next.tenantId}</span>. Keys and endpoints
        you create belong to the account you are in. Other tabs of the portal follow your choice.
      </p>
      <ErrorNotice error={error} />
      <div class="actions">
        <button
          type="button"
          class="primary"
          disabled={busy}
          onClick={() =>
            void choose(async () => {
              await switchSession(api);
              return next;
            })
          }
        >
          Switch to {next.tenantId}
        </button>
        <button type="button" disabled={busy} onClick={() => void choose(() => keepStandingSession(api))}>
          Stay in {current.tenantId}
        </button>
      </div>
    </main>
  );
}
