import type { WebhookView } from './api-types.js';
import { disabledSentence } from './endpoint-health.js';

/**
 * A disabled endpoint says so where it is seen (the list and its own page): why, when, what that
 * means for its deliveries, and the way back. `onEnable` is absent for a session that may not write.
 */
export function DisabledBanner({
  webhook,
  named,
  onEnable,
}: {
  webhook: WebhookView;
  /** Name the endpoint: the list shows several. */
  named?: boolean;
  onEnable?: (() => void) | undefined;
}) {
  return (
    <section class="banner warn" aria-label={`Endpoint ${webhook.url} is disabled`}>
      <p>
        <strong>
          {named ? (
            <>
              Endpoint <span class="mono break">{webhook.url}</span> was
            </>
          ) : (
            'This endpoint was'
          )}{' '}
          {disabledSentence(webhook)}.
        </strong>{' '}
        New deliveries are held, and are sent once it is enabled.
      </p>
      {onEnable ? (
        <button type="button" onClick={onEnable}>
          Enable endpoint<span class="visually-hidden"> {webhook.url}</span>
        </button>
      ) : null}
    </section>
  );
}
