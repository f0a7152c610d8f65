import { useState } from 'preact/hooks';
import type { ApiError } from './api-client.js';
import type { PageResponse, WebhookStats, WebhookView } from './api-types.js';
import { PagerControls, useCursorPager } from './cursor-pager.js';
import { createSettingsBody, type DeliverySettingsDraft } from './delivery-settings.js';
import { DeliverySettingsFields } from './delivery-settings-fields.js';
import { DialogBox, DialogFormActions } from './dialog-box.js';
import { DisabledBanner } from './disabled-banner.js';
import { type EndpointAction, EndpointActionDialog, setEndpointStatus } from './endpoint-actions.js';
import { EndpointTargetFields } from './endpoint-fields.js';
import { disabledReasonText, successRate } from './endpoint-health.js';
import { ErrorNotice, Loading, StatusLine } from './notices.js';
import { usePortal } from './portal-context.js';
import { hrefOf } from './routes.js';
import { useLoader } from './use-loader.js';
import { useSubmit } from './use-submit.js';

type PageAction = EndpointAction | { kind: 'create' };

export function WebhooksPage() {
  const { api, can } = usePortal();
  const pager = useCursorPager();
  const webhooks = useLoader(
    () => api.get<PageResponse<WebhookView>>('/webhooks', { cursor: pager.cursor }),
    [pager.cursor],
  );
  const stats = useLoader(() => api.get<WebhookStats>('/webhooks/stats'), []);
  const [action, setAction] = useState<PageAction | null>(null);
  const [status, setStatus] = useState('');
  const [error, setError] = useState<ApiError | null>(null);
  const writable = can('webhooks:write');
  const done = (message: string, next: PageAction | null = null) => {
    setStatus(message);
    setError(null);
    setAction(next);
    webhooks.reload();
  };
  const toggle = async (webhook: WebhookView) => {
    try {
      done(await setEndpointStatus(api, webhook, webhook.status === 'active' ? 'disabled' : 'active'));
    } catch (caught) {
      setStatus('');
      setError(caught as ApiError);
    }
  };

  return (
    <section aria-labelledby="webhooks-heading">
      <div class="page-head">
        <h1 id="webhooks-heading">Webhook endpoints</h1>
        {writable ? (
          <button type="button" class="primary" onClick={() => setAction({ kind: 'create' })}>
            Add endpoint
          </button>
        ) : null}
      </div>
      <StatusLine message={status} />
      <ErrorNotice error={error ?? webhooks.error} />
      {webhooks.data === undefined ? (
        webhooks.loading ? (
          <Loading what="endpoints" />
        ) : null
      ) : webhooks.data.data.length === 0 ? (
        <p>No endpoints yet.</p>
      ) : (
        <>
          {webhooks.data.data
            .filter((webhook) => webhook.status === 'disabled')
            .map((webhook) => (
              <DisabledBanner
                key={webhook.id}
                webhook={webhook}
                named
                onEnable={writable ? () => void toggle(webhook) : undefined}
              />
            ))}
          <div class="table-wrap">
            <table>
              <caption class="visually-hidden">Your webhook endpoints</caption>
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">Status</th>
                  <th scope="col">Disabled because</th>
                  <th scope="col">Succeeded in the last 24 h</th>
                  {writable ? <th scope="col">Actions</th> : null}
                </tr>
              </thead>
              <tbody>
                {webhooks.data.data.map((webhook) => (
                  <tr key={webhook.id}>
                    <th scope="row">
                      <a class="mono break" href={hrefOf({ page: 'webhook', webhookId: webhook.id })}>
                        {webhook.url}
                      </a>
                      {webhook.description ? (
                        <div class="muted small break">{webhook.description}</div>
                      ) : null}
                    </th>
                    <td>{webhook.events.join(', ')}</td>
                    <td>
                      <span class={`badge badge-${webhook.status}`}>{webhook.status}</span>
                    </td>
                    <td>{disabledReasonText(webhook)}</td>
                    <td>{stats.error ? 'Unknown' : successRate(stats.data, webhook.id)}</td>
                    {writable ? (
                      <td>
                        <div class="row-actions">
                          <button type="button" onClick={() => void toggle(webhook)}>
                            {webhook.status === 'active' ? 'Disable' : 'Enable'}
                            <span class="visually-hidden"> {webhook.url}</span>
                          </button>
                          <button type="button" onClick={() => setAction({ kind: 'rotate', webhook })}>
                            Rotate secret<span class="visually-hidden"> of {webhook.url}</span>
                          </button>
                          <button
                            type="button"
                            class="danger"
                            onClick={() => setAction({ kind: 'delete', webhook })}
                          >
                            Delete<span class="visually-hidden"> {webhook.url}</span>
                          </button>
                        </div>
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <PagerControls pager={pager} nextCursor={webhooks.data?.nextCursor} label="Endpoint pages" />
      {action?.kind === 'create' ? (
        <CreateEndpointDialog
          onClose={() => setAction(null)}
          onCreated={(webhook, secret) =>
            done(`Endpoint ${webhook.url} added.`, { kind: 'secret', title: 'Endpoint added', secret })
          }
        />
      ) : action ? (
        <EndpointActionDialog action={action} onClose={() => setAction(null)} onDone={done} />
      ) : null}
    </section>
  );
}

function CreateEndpointDialog({
  onClose,
  onCreated,
}: {
  onClose: () => void;
  onCreated: (webhook: WebhookView, secret: string) => void;
}) {
  const { api } = usePortal();
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>([]);
  const [description, setDescription] = useState('');
  const [settings, setSettings] = useState<DeliverySettingsDraft>({
    scheme: '',
    limited: false,
    perSecond: '',
  });
  const { busy, error, run } = useSubmit();
  const submit = async (event: Event) => {
    event.preventDefault();
    await run(async () => {
      const answer = await api.post<{ webhook: WebhookView; secret: string }>('/webhooks', {
        url,
        events,
        ...(description.trim() ? { description } : {}),
        ...createSettingsBody(settings),
      });
      onCreated(answer.webhook, answer.secret);
    });
  };
  return (
    <DialogBox title="Add a webhook endpoint" onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <ErrorNotice error={error} />
        <EndpointTargetFields
          url={url}
          onUrl={setUrl}
          events={events}
          onEvents={setEvents}
          description={description}
          onDescription={setDescription}
          error={error}
        />
        <DeliverySettingsFields draft={settings} onChange={setSettings} error={error} isNew />
        <DialogFormActions submitLabel="Add endpoint" busy={busy} onCancel={onClose} />
      </form>
    </DialogBox>
  );
}
