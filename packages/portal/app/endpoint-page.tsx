import { useState } from 'preact/hooks';
import type { ApiError } from './api-client.js';
import type { DeliveryStatus, DeliveryView, PageResponse, WebhookView } from './api-types.js';
import { settlesSoon, useRefreshWhile } from './auto-refresh.js';
import { CopyButton } from './copy-button.js';
import { PagerControls, useCursorPager } from './cursor-pager.js';
import { formatDate, isoToLocalInput, localInputToIso } from './dates.js';
import { formatDeliveryRate, schemeLabel } from './delivery-settings.js';
import { DisabledBanner } from './disabled-banner.js';
import { type EndpointAction, EndpointActionDialog, setEndpointStatus } from './endpoint-actions.js';
import { EditEndpointDialog } from './endpoint-edit.js';
import { disabledReasonText } from './endpoint-health.js';
import { Field } from './form-fields.js';
import { ErrorNotice, Loading, StatusLine } from './notices.js';
import { usePortal } from './portal-context.js';
import { hrefOf } from './routes.js';
import { useLoader } from './use-loader.js';
import { useSubmit } from './use-submit.js';

/**
 * Every delivery state, in the filter's order. A record of core's `DeliveryStatus`, so a state
 * added to or taken from core does not compile here until the filter follows.
 */
const STATUS_ORDER: Record<DeliveryStatus, number> = {
  pending: 0,
  in_flight: 1,
  retry_scheduled: 2,
  succeeded: 3,
  failed: 4,
  held: 5,
};
const FILTER_STATUSES = (Object.keys(STATUS_ORDER) as DeliveryStatus[]).sort(
  (a, b) => STATUS_ORDER[a] - STATUS_ORDER[b],
);

export function statusLabel(state: string): string {
  return state.replace(/_/g, ' ');
}

export function EndpointPage({ webhookId }: { webhookId: string }) {
  const { api, can } = usePortal();
  const webhook = useLoader(() => api.get<{ webhook: WebhookView }>(`/webhooks/${webhookId}`), [webhookId]);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const [action, setAction] = useState<EndpointAction | null>(null);
  const [editing, setEditing] = useState(false);
  const [deliveriesRound, setDeliveriesRound] = useState(0);
  const [deleted, setDeleted] = useState(false);
  const writable = can('webhooks:write');
  const endpoint = webhook.data?.webhook;

  const done = (message: string, next: EndpointAction | null = null) => {
    setStatus(message);
    setError(null);
    setAction(next);
    if (!deleted) webhook.reload();
  };
  const toggle = async (current: WebhookView) => {
    try {
      done(await setEndpointStatus(api, current, current.status === 'active' ? 'disabled' : 'active'));
    } catch (caught) {
      setStatus('');
      setError(caught as ApiError);
    }
  };

  if (deleted) {
    return (
      <section aria-labelledby="endpoint-heading">
        <h1 id="endpoint-heading">Endpoint deleted</h1>
        <StatusLine message={status} />
        <p>
          <a href={hrefOf({ page: 'webhooks' })}>Back to all endpoints</a>
        </p>
      </section>
    );
  }
  return (
    <section aria-labelledby="endpoint-heading">
      <p>
        <a href={hrefOf({ page: 'webhooks' })}>All endpoints</a>
      </p>
      <h1 id="endpoint-heading">
        Endpoint <span class="mono break">{endpoint?.url ?? webhookId}</span>
      </h1>
      <StatusLine message={status} />
      <ErrorNotice error={error ?? webhook.error} />
      {endpoint?.status === 'disabled' ? (
        <DisabledBanner webhook={endpoint} onEnable={writable ? () => void toggle(endpoint) : undefined} />
      ) : null}
      {endpoint ? (
        <>
          <dl class="facts">
            {endpoint.description ? (
              <>
                <dt>Description</dt>
                <dd class="break pre-line">{endpoint.description}</dd>
              </>
            ) : null}
            <dt>Endpoint ID</dt>
            <dd>
              <span class="mono break">{endpoint.id}</span>{' '}
              <CopyButton text={endpoint.id} what="endpoint ID" />
            </dd>
            <dt>Status</dt>
            <dd>
              <span class={`badge badge-${endpoint.status}`}>{endpoint.status}</span>
              {endpoint.status === 'disabled' ? ` (${disabledReasonText(endpoint)})` : null}
            </dd>
            <dt>Events</dt>
            <dd>{endpoint.events.join(', ')}</dd>
            <dt>Signature scheme</dt>
            <dd>{schemeLabel(endpoint.signatureScheme)}</dd>
            {endpoint.publicKey ? (
              <>
                <dt>Public key (ed25519)</dt>
                <dd class="mono">{endpoint.publicKey}</dd>
              </>
            ) : null}
            <dt>Delivery rate</dt>
            <dd>{formatDeliveryRate(endpoint.deliveryRate)}</dd>
            <dt>Created</dt>
            <dd>{formatDate(endpoint.createdAt)}</dd>
            {endpoint.previousSecretExpiresAt ? (
              <>
                <dt>Old secret signs until</dt>
                <dd>{formatDate(endpoint.previousSecretExpiresAt)}</dd>
              </>
            ) : null}
          </dl>
          {writable ? (
            <div class="actions">
              <button type="button" onClick={() => setEditing(true)}>
                Edit endpoint
              </button>
              <button type="button" onClick={() => void toggle(endpoint)}>
                {endpoint.status === 'active' ? 'Disable endpoint' : 'Enable endpoint'}
              </button>
              <button type="button" onClick={() => setAction({ kind: 'rotate', webhook: endpoint })}>
                Rotate secret
              </button>
              <button
                type="button"
                class="danger"
                onClick={() => setAction({ kind: 'delete', webhook: endpoint })}
              >
                Delete endpoint
              </button>
            </div>
          ) : null}
          <DeliveryLog webhookId={webhookId} round={deliveriesRound} />
          {writable ? (
            <>
              <SendTestEvent webhook={endpoint} onSent={() => setDeliveriesRound((n) => n + 1)} />
              <RecoverFailed webhookId={webhookId} onQueued={() => setDeliveriesRound((n) => n + 1)} />
            </>
          ) : null}
        </>
      ) : webhook.loading ? (
        <Loading what="the endpoint" />
      ) : null}
      {editing && endpoint ? (
        <EditEndpointDialog
          webhook={endpoint}
          onClose={() => setEditing(false)}
          onSaved={(message) => {
            setEditing(false);
            done(message);
          }}
        />
      ) : null}
      {action ? (
        <EndpointActionDialog
          action={action}
          onClose={() => setAction(null)}
          onDone={done}
          onDeleted={() => setDeleted(true)}
        />
      ) : null}
    </section>
  );
}

/** What narrows the log besides the state, as applied (the form's fields apply on submit). */
interface LogFilter {
  eventId: string;
  since: string;
  until: string;
}
const NO_FILTER: LogFilter = { eventId: '', since: '', until: '' };

/**
 * The endpoint's deliveries, newest first, narrowed by state, event type, event id and a time
 * range (docs/http-api.md §4.4); `round` changes to load them afresh.
 */
function DeliveryLog({ webhookId, round }: { webhookId: string; round: number }) {
  const { api, session } = usePortal();
  const pager = useCursorPager();
  const [state, setState] = useState('');
  const [type, setType] = useState('');
  const [draft, setDraft] = useState<LogFilter>(NO_FILTER);
  const [filter, setFilter] = useState<LogFilter>(NO_FILTER);
  const [seenRound, setSeenRound] = useState(round);
  // A new round (a test event sent, a recovery queued) starts again from the newest page.
  if (round !== seenRound) {
    setSeenRound(round);
    pager.reset();
  }
  const deliveries = useLoader(
    () =>
      api.get<PageResponse<DeliveryView>>(`/webhooks/${webhookId}/deliveries`, {
        status: state || null,
        type: type || null,
        eventId: filter.eventId.trim() || null,
        since: localInputToIso(filter.since),
        until: localInputToIso(filter.until),
        cursor: pager.cursor,
      }),
    [webhookId, state, type, filter, pager.cursor, round],
  );
  const narrowed = state !== '' || type !== '' || filter !== NO_FILTER;
  const apply = (next: LogFilter) => {
    setFilter(next);
    pager.reset();
  };
  const moving = deliveries.data?.data.some((delivery) => settlesSoon(delivery)) ?? false;
  useRefreshWhile(moving, deliveries.data, deliveries.reload);
  return (
    <section aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading">Deliveries</h2>
      <div class="toolbar">
        <Field label="Show">
          {(props) => (
            <select
              {...props}
              value={state}
              onChange={(event) => {
                setState(event.currentTarget.value);
                pager.reset();
              }}
            >
              <option value="">All deliveries</option>
              {FILTER_STATUSES.map((option) => (
                <option key={option} value={option}>
                  {statusLabel(option)}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Events of type">
          {(props) => (
            <select
              {...props}
              value={type}
              onChange={(event) => {
                setType(event.currentTarget.value);
                pager.reset();
              }}
            >
              <option value="">All event types</option>
              {session.events.map((option) => (
                <option key={option.type} value={option.type}>
                  {option.type}
                </option>
              ))}
            </select>
          )}
        </Field>
        <button type="button" onClick={deliveries.reload}>
          Refresh
        </button>
      </div>
      <form
        class="toolbar"
        aria-label="Find deliveries"
        onSubmit={(event) => {
          event.preventDefault();
          apply({ ...draft });
        }}
      >
        <Field label="Event ID" error={deliveries.error?.fieldMessage('eventId')}>
          {(props) => (
            <input
              {...props}
              type="search"
              class="mono"
              value={draft.eventId}
              onInput={(e) => setDraft({ ...draft, eventId: e.currentTarget.value })}
            />
          )}
        </Field>
        <Field label="From" error={deliveries.error?.fieldMessage('since')}>
          {(props) => (
            <input
              {...props}
              type="datetime-local"
              value={draft.since}
              onInput={(e) => setDraft({ ...draft, since: e.currentTarget.value })}
            />
          )}
        </Field>
        <Field label="Until" error={deliveries.error?.fieldMessage('until')}>
          {(props) => (
            <input
              {...props}
              type="datetime-local"
              value={draft.until}
              onInput={(e) => setDraft({ ...draft, until: e.currentTarget.value })}
            />
          )}
        </Field>
        <button type="submit">Find</button>
        {narrowed ? (
          <button
            type="button"
            onClick={() => {
              setState('');
              setType('');
              setDraft(NO_FILTER);
              apply(NO_FILTER);
            }}
          >
            Show all
          </button>
        ) : null}
      </form>
      <ErrorNotice error={deliveries.error} />
      {deliveries.data === undefined ? (
        deliveries.loading ? (
          <Loading what="deliveries" />
        ) : null
      ) : deliveries.data.data.length === 0 ? (
        <p>{narrowed ? 'No deliveries match.' : 'No deliveries yet.'}</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Deliveries to this endpoint, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last attempt</th>
                <th scope="col">Next attempt</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.data.data.map((delivery) => (
                <tr key={delivery.id}>
                  <th scope="row">
                    <a href={hrefOf({ page: 'delivery', webhookId, deliveryId: delivery.id })}>
                      {delivery.eventType}
                      <span class="visually-hidden">, delivery {delivery.id}</span>
                    </a>
                    {delivery.test ? <span class="badge badge-test">test</span> : null}
                    <div class="mono muted small">{delivery.eventId}</div>
                  </th>
                  <td>
                    <span class={`badge badge-${delivery.status}`}>{statusLabel(delivery.status)}</span>
                  </td>
                  <td>{delivery.attemptCount}</td>
                  <td>{formatDate(delivery.lastAttemptAt, 'None yet')}</td>
                  <td>{formatDate(delivery.nextAttemptAt)}</td>
                  <td>{formatDate(delivery.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <PagerControls pager={pager} nextCursor={deliveries.data?.nextCursor} label="Delivery pages" />
    </section>
  );
}

/** Sends one event of a chosen type to this endpoint, its example pre-filled and editable. */
function SendTestEvent({ webhook, onSent }: { webhook: WebhookView; onSent: () => void }) {
  const { api, session } = usePortal();
  // Any type of the catalog, subscribed or not: a test shows what the endpoint would get (docs/decisions.md §8.16).
  const subscribed = (type: { type: string }) => webhook.events.includes(type.type);
  const types = [...session.events.filter(subscribed), ...session.events.filter((type) => !subscribed(type))];
  const exampleOf = (name: string) =>
    JSON.stringify(types.find((type) => type.type === name)?.example ?? {}, null, 2);
  const [type, setType] = useState(types[0]?.type ?? '');
  const [data, setData] = useState(() => exampleOf(types[0]?.type ?? ''));
  const [jsonError, setJsonError] = useState<string | undefined>();
  const [status, setStatus] = useState('');
  const { busy, error, run } = useSubmit();
  if (types.length === 0) return null;

  const send = async (event: Event) => {
    event.preventDefault();
    setStatus('');
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch (caught) {
      setJsonError(`This is not valid JSON: ${(caught as Error).message}`);
      return;
    }
    setJsonError(undefined);
    await run(async () => {
      const answer = await api.post<{ event: { id: string }; delivery: DeliveryView }>(
        `/webhooks/${webhook.id}/test`,
        {
          type,
          data: parsed,
        },
      );
      setStatus(
        answer.delivery.status === 'held'
          ? `Test event ${answer.event.id} is held: this endpoint is disabled. Enable it to send it.`
          : `Test event ${answer.event.id} sent: it is at the top of the deliveries.`,
      );
      onSent();
    });
  };
  return (
    <section aria-labelledby="test-event-heading">
      <h2 id="test-event-heading">Send a test event</h2>
      <form onSubmit={send} noValidate>
        <StatusLine message={status} />
        <ErrorNotice error={error} />
        <Field label="Event type">
          {(props) => (
            <select
              {...props}
              value={type}
              onChange={(e) => {
                setType(e.currentTarget.value);
                setData(exampleOf(e.currentTarget.value));
              }}
            >
              {types.map((option) => (
                <option key={option.type} value={option.type}>
                  {option.type}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Event data (JSON)" error={jsonError ?? error?.fieldMessage('data')}>
          {(props) => (
            <textarea
              {...props}
              class="mono"
              rows={10}
              spellcheck={false}
              value={data}
              onInput={(e) => setData(e.currentTarget.value)}
            />
          )}
        </Field>
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Send test event
          </button>
        </div>
      </form>
    </section>
  );
}

/** Queues again every failed delivery of this endpoint since a chosen time. */
function RecoverFailed({ webhookId, onQueued }: { webhookId: string; onQueued: () => void }) {
  const { api } = usePortal();
  const [since, setSince] = useState(() => isoToLocalInput(new Date(Date.now() - 24 * 3_600_000)));
  const [status, setStatus] = useState('');
  const { busy, error, run } = useSubmit();
  const recover = async (event: Event) => {
    event.preventDefault();
    setStatus('');
    await run(async () => {
      const answer = await api.post<{ queued: number }>(`/webhooks/${webhookId}/recover`, {
        since: localInputToIso(since),
      });
      setStatus(
        answer.queued === 0
          ? 'No failed deliveries in that time.'
          : `${answer.queued} failed ${answer.queued === 1 ? 'delivery' : 'deliveries'} queued again.`,
      );
      onQueued();
    });
  };
  return (
    <section aria-labelledby="recover-heading">
      <h2 id="recover-heading">Recover failed deliveries</h2>
      <form onSubmit={recover} noValidate>
        <StatusLine message={status} />
        <ErrorNotice error={error} />
        <Field
          label="Failed since"
          hint="Every failed delivery of an event since then is sent again."
          error={error?.fieldMessage('since')}
        >
          {(props) => (
            <input
              {...props}
              type="datetime-local"
              required
              value={since}
              onInput={(e) => setSince(e.currentTarget.value)}
            />
          )}
        </Field>
        <div class="actions">
          <button type="submit" disabled={busy}>
            Recover failed deliveries
          </button>
        </div>
      </form>
    </section>
  );
}
