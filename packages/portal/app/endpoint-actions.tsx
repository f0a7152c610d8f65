import { useState } from 'preact/hooks';
import type { WebhookView } from './api-types.js';
import { ConfirmDialog, DialogBox, DialogFormActions } from './dialog-box.js';
import { Field } from './form-fields.js';
import { ErrorNotice } from './notices.js';
import { usePortal } from './portal-context.js';
import { SecretReveal } from './secret-reveal.js';
import { useSubmit } from './use-submit.js';

/** The overlaps a rotation offers: how long the old secret keeps signing beside the new one. */
export const OVERLAPS = [
  { seconds: 0, label: 'None: the old secret stops at once' },
  { seconds: 3_600, label: '1 hour' },
  { seconds: 86_400, label: '24 hours' },
  { seconds: 604_800, label: '7 days' },
] as const;

export type EndpointAction =
  | { kind: 'rotate'; webhook: WebhookView }
  | { kind: 'delete'; webhook: WebhookView }
  | { kind: 'secret'; title: string; secret: string };

/** Enables or disables an endpoint; answers the message to show. */
export async function setEndpointStatus(
  api: ReturnType<typeof usePortal>['api'],
  webhook: WebhookView,
  status: 'active' | 'disabled',
): Promise<string> {
  await api.patch<{ webhook: WebhookView }>(`/webhooks/${webhook.id}`, { status });
  return status === 'active'
    ? `Endpoint ${webhook.url} enabled: held deliveries are on their way.`
    : `Endpoint ${webhook.url} disabled: new deliveries are held until you enable it.`;
}

/** The rotate, delete and secret dialogs of one endpoint, for the list and the detail page. */
export function EndpointActionDialog({
  action,
  onClose,
  onDone,
  onDeleted,
}: {
  action: EndpointAction;
  onClose: () => void;
  onDone: (message: string, next?: EndpointAction) => void;
  /** After a delete, beside `onDone`: the detail page has nothing left to show. */
  onDeleted?: () => void;
}) {
  switch (action.kind) {
    case 'rotate':
      return <RotateSecretDialog webhook={action.webhook} onClose={onClose} onDone={onDone} />;
    case 'delete':
      return (
        <DeleteEndpointDialog
          webhook={action.webhook}
          onClose={onClose}
          onDone={(message) => {
            onDone(message);
            onDeleted?.();
          }}
        />
      );
    case 'secret':
      return (
        <DialogBox title={action.title} onClose={onClose}>
          <SecretReveal
            label="Signing secret"
            copyLabel="Copy secret"
            secret={action.secret}
            onDone={onClose}
          />
        </DialogBox>
      );
  }
}

function RotateSecretDialog({
  webhook,
  onClose,
  onDone,
}: {
  webhook: WebhookView;
  onClose: () => void;
  onDone: (message: string, next?: EndpointAction) => void;
}) {
  const { api } = usePortal();
  const [overlap, setOverlap] = useState<number>(0);
  const { busy, error, run } = useSubmit();
  const rotate = async (event: Event) => {
    event.preventDefault();
    await run(async () => {
      const answer = await api.post<{ webhook: WebhookView; secret: string | null }>(
        `/webhooks/${webhook.id}/rotate`,
        {
          overlapSeconds: overlap,
        },
      );
      // An ed25519 endpoint's secret key is never shown: its receivers need the new public key.
      if (answer.secret === null) {
        onDone(`The key pair of ${webhook.url} was rotated. Its new public key: ${answer.webhook.publicKey}`);
        return;
      }
      onDone(`The signing secret of ${webhook.url} was rotated.`, {
        kind: 'secret',
        title: 'New signing secret',
        secret: answer.secret,
      });
    });
  };
  return (
    <DialogBox title="Rotate the signing secret" onClose={onClose}>
      <form onSubmit={rotate}>
        <p>
          Deliveries to <span class="mono">{webhook.url}</span> are signed with a new secret. During an
          overlap they carry a signature with each secret, so your receiver can switch without losing any.
        </p>
        <ErrorNotice error={error} />
        <Field label="Keep the old secret signing for">
          {(props) => (
            <select
              {...props}
              value={String(overlap)}
              onChange={(e) => setOverlap(Number(e.currentTarget.value))}
            >
              {OVERLAPS.map((option) => (
                <option key={option.seconds} value={String(option.seconds)}>
                  {option.label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <DialogFormActions submitLabel="Rotate secret" busy={busy} onCancel={onClose} />
      </form>
    </DialogBox>
  );
}

function DeleteEndpointDialog({
  webhook,
  onClose,
  onDone,
}: {
  webhook: WebhookView;
  onClose: () => void;
  onDone: (message: string) => void;
}) {
  const { api } = usePortal();
  const { busy, error, run } = useSubmit();
  const remove = async () => {
    await run(async () => {
      await api.delete(`/webhooks/${webhook.id}`);
      onDone(`Endpoint ${webhook.url} deleted.`);
    });
  };
  return (
    <ConfirmDialog
      title="Delete this endpoint?"
      confirmLabel="Delete endpoint"
      danger
      busy={busy}
      onConfirm={remove}
      onClose={onClose}
    >
      <p>
        <span class="mono">{webhook.url}</span> stops receiving events, and its delivery log is deleted with
        it.
      </p>
      <ErrorNotice error={error} />
    </ConfirmDialog>
  );
}
