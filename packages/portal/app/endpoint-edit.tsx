import { useState } from 'preact/hooks';
import type { WebhookView } from './api-types.js';
import { changedSettingsBody, draftOf, formatDeliveryRate, schemeLabel } from './delivery-settings.js';
import { DeliverySettingsFields } from './delivery-settings-fields.js';
import { DialogBox, DialogFormActions } from './dialog-box.js';
import { EndpointTargetFields } from './endpoint-fields.js';
import { ErrorNotice } from './notices.js';
import { usePortal } from './portal-context.js';
import { useSubmit } from './use-submit.js';

/**
 * One endpoint's URL, events, description, signature scheme and delivery rate, saved in one PATCH of what
 * changed: the API takes them together, and an unchanged URL is not judged again.
 */
export function EditEndpointDialog({
  webhook,
  onClose,
  onSaved,
}: {
  webhook: WebhookView;
  onClose: () => void;
  onSaved: (message: string) => void;
}) {
  const { api } = usePortal();
  const [url, setUrl] = useState(webhook.url);
  const [events, setEvents] = useState<string[]>(webhook.events);
  const [description, setDescription] = useState(webhook.description ?? '');
  const [settings, setSettings] = useState(() => draftOf(webhook));
  const { busy, error, run } = useSubmit();
  const sameEvents =
    events.length === webhook.events.length && events.every((e) => webhook.events.includes(e));
  const save = async (event: Event) => {
    event.preventDefault();
    const body = {
      ...(url !== webhook.url ? { url } : {}),
      ...(sameEvents ? {} : { events }),
      ...(description.trim() === (webhook.description ?? '') ? {} : { description }),
      ...changedSettingsBody(webhook, settings),
    };
    if (Object.keys(body).length === 0) {
      onSaved('Nothing changed.');
      return;
    }
    await run(async () => {
      const answer = await api.patch<{ webhook: WebhookView }>(`/webhooks/${webhook.id}`, body);
      const saved = answer.webhook;
      onSaved(
        `Endpoint ${saved.url} saved: signed with ${schemeLabel(saved.signatureScheme)}, ` +
          `delivery rate ${formatDeliveryRate(saved.deliveryRate)}.`,
      );
    });
  };
  return (
    <DialogBox title="Edit the endpoint" onClose={onClose}>
      <form onSubmit={save} noValidate>
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
        <DeliverySettingsFields draft={settings} onChange={setSettings} error={error} isNew={false} />
        <DialogFormActions submitLabel="Save changes" busy={busy} onCancel={onClose} />
      </form>
    </DialogBox>
  );
}
