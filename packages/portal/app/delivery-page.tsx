import { useState } from 'preact/hooks';
import type { DeliveryDetailView, DeliveryView } from './api-types.js';
import { settlesSoon, useRefreshWhile } from './auto-refresh.js';
import { CodeBlock } from './code-block.js';
import { CopyButton } from './copy-button.js';
import { formatDate, formatPreciseDate } from './dates.js';
import { statusLabel } from './endpoint-page.js';
import { ErrorNotice, Loading, StatusLine } from './notices.js';
import { usePortal } from './portal-context.js';
import { hrefOf } from './routes.js';
import { useLoader } from './use-loader.js';
import { useSubmit } from './use-submit.js';

/** What the one retry route does to a delivery in each state it takes (docs/http-api.md §4.4). */
const REQUEUE_ACTIONS: Partial<Record<DeliveryView['status'], { label: string; done: string }>> = {
  failed: { label: 'Retry delivery', done: 'Delivery queued again: it is sent in a moment.' },
  succeeded: { label: 'Resend delivery', done: 'Delivery queued to be sent again, with the same event id.' },
  retry_scheduled: { label: 'Retry now', done: 'Next attempt brought forward: it is sent in a moment.' },
};

/** One delivery: its event as sent, every attempt, and a retry, resend or retry now where one applies. */
export function DeliveryPage({ webhookId, deliveryId }: { webhookId: string; deliveryId: string }) {
  const { api, can } = usePortal();
  const path = `/webhooks/${webhookId}/deliveries/${deliveryId}`;
  const detail = useLoader(() => api.get<DeliveryDetailView>(path), [path]);
  useRefreshWhile(detail.data !== undefined && settlesSoon(detail.data.delivery), detail.data, detail.reload);
  const [status, setStatus] = useState('');
  const { busy, error, run } = useSubmit();
  const data = detail.data;
  const action = data ? REQUEUE_ACTIONS[data.delivery.status] : undefined;
  const requeue = async (done: string) => {
    setStatus('');
    await run(async () => {
      await api.post<{ delivery: DeliveryView }>(`${path}/retry`);
      setStatus(done);
      detail.reload();
    });
  };

  return (
    <section aria-labelledby="delivery-heading">
      <p>
        <a href={hrefOf({ page: 'webhook', webhookId })}>Back to the endpoint</a>
      </p>
      <h1 id="delivery-heading">
        Delivery <span class="mono">{deliveryId}</span>
      </h1>
      <StatusLine message={status} />
      <ErrorNotice error={error ?? detail.error} />
      {data ? (
        <>
          <dl class="facts">
            <dt>Event</dt>
            <dd>
              {data.event.type} {data.delivery.test ? <span class="badge badge-test">test</span> : null}{' '}
              <span class="mono muted break">{data.event.id}</span>{' '}
              <CopyButton text={data.event.id} what="event ID" />
            </dd>
            <dt>Delivery ID</dt>
            <dd>
              <span class="mono break">{data.delivery.id}</span>{' '}
              <CopyButton text={data.delivery.id} what="delivery ID" />
            </dd>
            <dt>Status</dt>
            <dd>
              <span class={`badge badge-${data.delivery.status}`}>{statusLabel(data.delivery.status)}</span>
            </dd>
            <dt>Attempts</dt>
            <dd>{data.delivery.attemptCount}</dd>
            <dt>Next attempt</dt>
            <dd>{formatDate(data.delivery.nextAttemptAt)}</dd>
            <dt>Created</dt>
            <dd>{formatDate(data.delivery.createdAt)}</dd>
          </dl>
          {can('webhooks:write') && action ? (
            <div class="actions">
              <button type="button" class="primary" onClick={() => void requeue(action.done)} disabled={busy}>
                {action.label}
              </button>
            </div>
          ) : null}
          <h2>Event payload</h2>
          <CodeBlock label="Event payload" text={JSON.stringify(data.event, null, 2)} />
          <h2>Attempts</h2>
          {data.attempts.length === 0 ? (
            <p>No attempts yet.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <caption class="visually-hidden">Every attempt, oldest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Attempt</th>
                    <th scope="col">Time</th>
                    <th scope="col">Status code</th>
                    <th scope="col">Duration</th>
                    <th scope="col">Error</th>
                    <th scope="col">Response body</th>
                  </tr>
                </thead>
                <tbody>
                  {data.attempts.map((attempt) => (
                    <tr key={attempt.attempt}>
                      <th scope="row">{attempt.attempt}</th>
                      <td>{formatPreciseDate(attempt.startedAt)}</td>
                      <td>{attempt.statusCode ?? 'No answer'}</td>
                      <td>{attempt.durationMs} ms</td>
                      <td>{attempt.error ?? '—'}</td>
                      <td>
                        {attempt.responseBody ? (
                          <CodeBlock
                            small
                            label={`Response body of attempt ${attempt.attempt}`}
                            text={attempt.responseBody}
                          />
                        ) : (
                          '—'
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      ) : detail.loading ? (
        <Loading what="the delivery" />
      ) : null}
    </section>
  );
}
