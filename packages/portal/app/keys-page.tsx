import { useState } from 'preact/hooks';
import type { ApiError } from './api-client.js';
import type { ApiKeyView, PageResponse, RateLimit } from './api-types.js';
import { CopyButton } from './copy-button.js';
import { PagerControls, useCursorPager } from './cursor-pager.js';
import { formatDate, localInputToIso } from './dates.js';
import { ConfirmDialog, DialogBox, DialogFormActions } from './dialog-box.js';
import { Choice, ChoiceGroup, Field, toggled } from './form-fields.js';
import { ErrorNotice, Loading, StatusLine } from './notices.js';
import { usePortal } from './portal-context.js';
import { SecretReveal } from './secret-reveal.js';
import { useLoader } from './use-loader.js';
import { useSubmit } from './use-submit.js';

type KeyAction =
  | { kind: 'create' }
  | { kind: 'rotate'; key: ApiKeyView }
  | { kind: 'revoke'; key: ApiKeyView }
  | { kind: 'rate-limit'; key: ApiKeyView }
  | { kind: 'secret'; title: string; secret: string };

export function formatRateLimit(limit: RateLimit | null): string {
  return limit ? `${limit.limit} per ${limit.window} s` : 'Default';
}

export function KeysPage() {
  const { api, can, session } = usePortal();
  const pager = useCursorPager();
  // A key with a scope this session may not grant is only read here (docs/decisions.md §22.5).
  const grantable = new Set(session.scopes.map((scope) => scope.name));
  const manageable = (key: ApiKeyView) => key.scopes.every((scope) => grantable.has(scope));
  const keys = useLoader(
    () => api.get<PageResponse<ApiKeyView>>('/keys', { cursor: pager.cursor }),
    [pager.cursor],
  );
  const [action, setAction] = useState<KeyAction | null>(null);
  const [status, setStatus] = useState('');
  const writable = can('keys:write');
  const done = (message: string, next: KeyAction | null = null) => {
    setStatus(message);
    setAction(next);
    keys.reload();
  };

  return (
    <section aria-labelledby="keys-heading">
      <div class="page-head">
        <h1 id="keys-heading">API keys</h1>
        {writable ? (
          <button type="button" class="primary" onClick={() => setAction({ kind: 'create' })}>
            Create key
          </button>
        ) : null}
      </div>
      <StatusLine message={status} />
      <ErrorNotice error={keys.error} />
      {keys.data === undefined ? (
        keys.loading ? (
          <Loading what="keys" />
        ) : null
      ) : keys.data.data.length === 0 ? (
        <p>No API keys yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Your API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key ID</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Status</th>
                <th scope="col">Rate limit</th>
                {writable ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {keys.data.data.map((key) => (
                <tr key={key.id}>
                  <th scope="row">{key.name}</th>
                  <td>
                    <span class="mono break">{key.keyLookup}</span>{' '}
                    <CopyButton text={key.keyLookup} what={`key ID of ${key.name}`} />
                  </td>
                  <td>{key.scopes.length ? key.scopes.join(', ') : 'None'}</td>
                  <td>{formatDate(key.createdAt)}</td>
                  <td>{formatDate(key.lastUsedAt, 'Never')}</td>
                  <td>{formatDate(key.expiresAt, 'Never')}</td>
                  <td>
                    <span class={`badge badge-${key.status}`}>{key.status}</span>
                  </td>
                  <td>{formatRateLimit(key.rateLimit)}</td>
                  {writable && !manageable(key) ? (
                    <td class="muted">Beyond this session’s scopes</td>
                  ) : writable ? (
                    <td>
                      <div class="row-actions">
                        {key.status === 'active' ? (
                          <button type="button" onClick={() => setAction({ kind: 'rotate', key })}>
                            Rotate<span class="visually-hidden"> {key.name}</span>
                          </button>
                        ) : null}
                        {key.status !== 'revoked' ? (
                          <>
                            <button type="button" onClick={() => setAction({ kind: 'rate-limit', key })}>
                              Rate limit<span class="visually-hidden"> of {key.name}</span>
                            </button>
                            <button
                              type="button"
                              class="danger"
                              onClick={() => setAction({ kind: 'revoke', key })}
                            >
                              Revoke<span class="visually-hidden"> {key.name}</span>
                            </button>
                          </>
                        ) : null}
                      </div>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <PagerControls pager={pager} nextCursor={keys.data?.nextCursor} label="API key pages" />
      {action?.kind === 'create' ? (
        <CreateKeyDialog
          onClose={() => setAction(null)}
          onCreated={(key, secret) =>
            done(`Key “${key.name}” created.`, { kind: 'secret', title: `Key “${key.name}” created`, secret })
          }
        />
      ) : null}
      {action?.kind === 'rotate' ? (
        <RotateKeyDialog
          apiKey={action.key}
          onClose={() => setAction(null)}
          onRotated={(secret) =>
            done(`Key “${action.key.name}” rotated: its old secret no longer works.`, {
              kind: 'secret',
              title: `New secret for “${action.key.name}”`,
              secret,
            })
          }
        />
      ) : null}
      {action?.kind === 'revoke' ? (
        <RevokeKeyDialog
          apiKey={action.key}
          onClose={() => setAction(null)}
          onRevoked={() => done(`Key “${action.key.name}” revoked.`)}
        />
      ) : null}
      {action?.kind === 'rate-limit' ? (
        <RateLimitDialog
          apiKey={action.key}
          onClose={() => setAction(null)}
          onSaved={(key) => done(`Rate limit of “${key.name}”: ${formatRateLimit(key.rateLimit)}.`)}
        />
      ) : null}
      {action?.kind === 'secret' ? (
        <DialogBox title={action.title} onClose={() => setAction(null)}>
          <SecretReveal
            label="API key"
            copyLabel="Copy key"
            secret={action.secret}
            onDone={() => setAction(null)}
          />
        </DialogBox>
      ) : null}
    </section>
  );
}

function CreateKeyDialog({
  onClose,
  onCreated,
}: {
  onClose: () => void;
  onCreated: (key: ApiKeyView, secret: string) => void;
}) {
  const { api, session } = usePortal();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>([]);
  const [expiresAt, setExpiresAt] = useState('');
  const [limit, setLimit] = useState('');
  const [seconds, setSeconds] = useState('');
  const { busy, error, run } = useSubmit();

  const submit = async (event: Event) => {
    event.preventDefault();
    const body: Record<string, unknown> = { name, scopes };
    if (expiresAt) body['expiresAt'] = localInputToIso(expiresAt);
    if (limit || seconds) body['rateLimit'] = { limit: Number(limit), window: Number(seconds) };
    await run(async () => {
      const answer = await api.post<{ key: ApiKeyView; secret: string }>('/keys', body);
      onCreated(answer.key, answer.secret);
    });
  };

  return (
    <DialogBox title="Create an API key" onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <ErrorNotice error={error} />
        <Field label="Name" hint="For you to tell keys apart." error={error?.fieldMessage('name')}>
          {(props) => (
            <input
              {...props}
              required
              maxLength={200}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        {session.scopes.length > 0 ? (
          <ChoiceGroup
            legend="Scopes"
            error={error?.fieldMessage('scopes')}
            noneChosen="Choose at least one scope"
          >
            {session.scopes.map((scope) => (
              <Choice
                key={scope.name}
                name="scopes"
                value={scope.name}
                description={scope.description}
                checked={scopes.includes(scope.name)}
                onToggle={(value, on) => setScopes((list) => toggled(list, value, on))}
              />
            ))}
          </ChoiceGroup>
        ) : null}
        <Field
          label="Expires (optional)"
          hint="Leave empty for a key that does not expire."
          error={error?.fieldMessage('expiresAt')}
        >
          {(props) => (
            <input
              {...props}
              type="datetime-local"
              value={expiresAt}
              onInput={(e) => setExpiresAt(e.currentTarget.value)}
            />
          )}
        </Field>
        <RateLimitFields
          limit={limit}
          seconds={seconds}
          onLimit={setLimit}
          onSeconds={setSeconds}
          error={error ? rateLimitError(error) : undefined}
        />
        <DialogFormActions submitLabel="Create key" busy={busy} onCancel={onClose} />
      </form>
    </DialogBox>
  );
}

function rateLimitError(error: ApiError): string | undefined {
  return error.details.find((detail) => detail.path?.startsWith('rateLimit'))?.message;
}

function RateLimitFields({
  limit,
  seconds,
  onLimit,
  onSeconds,
  error,
}: {
  limit: string;
  seconds: string;
  onLimit: (value: string) => void;
  onSeconds: (value: string) => void;
  error: string | undefined;
}) {
  return (
    <fieldset>
      <legend>Rate limit (optional)</legend>
      <p class="hint">At most this many requests in each window. Leave both empty for the default.</p>
      <div class="inline-fields">
        <Field label="Requests" error={error}>
          {(props) => (
            <input
              {...props}
              type="number"
              min={1}
              step={1}
              value={limit}
              onInput={(e) => onLimit(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Window (seconds)">
          {(props) => (
            <input
              {...props}
              type="number"
              min={1}
              max={86400}
              step={1}
              value={seconds}
              onInput={(e) => onSeconds(e.currentTarget.value)}
            />
          )}
        </Field>
      </div>
    </fieldset>
  );
}

function RotateKeyDialog({
  apiKey,
  onClose,
  onRotated,
}: {
  apiKey: ApiKeyView;
  onClose: () => void;
  onRotated: (secret: string) => void;
}) {
  const { api } = usePortal();
  const { busy, error, run } = useSubmit();
  const rotate = async () => {
    await run(async () => {
      const answer = await api.post<{ key: ApiKeyView; secret: string }>(`/keys/${apiKey.id}/rotate`);
      onRotated(answer.secret);
    });
  };
  return (
    <ConfirmDialog
      title={`Rotate “${apiKey.name}”?`}
      confirmLabel="Rotate key"
      busy={busy}
      onConfirm={rotate}
      onClose={onClose}
    >
      <p>A new secret replaces the old one, which stops working at once. Update every client that uses it.</p>
      <ErrorNotice error={error} />
    </ConfirmDialog>
  );
}

function RevokeKeyDialog({
  apiKey,
  onClose,
  onRevoked,
}: {
  apiKey: ApiKeyView;
  onClose: () => void;
  onRevoked: () => void;
}) {
  const { api } = usePortal();
  const { busy, error, run } = useSubmit();
  const revoke = async () => {
    await run(async () => {
      await api.delete(`/keys/${apiKey.id}`);
      onRevoked();
    });
  };
  return (
    <ConfirmDialog
      title={`Revoke “${apiKey.name}”?`}
      confirmLabel="Revoke key"
      danger
      busy={busy}
      onConfirm={revoke}
      onClose={onClose}
    >
      <p>Every request with this key fails from now on. A revoked key cannot be used again.</p>
      <ErrorNotice error={error} />
    </ConfirmDialog>
  );
}

function RateLimitDialog({
  apiKey,
  onClose,
  onSaved,
}: {
  apiKey: ApiKeyView;
  onClose: () => void;
  onSaved: (key: ApiKeyView) => void;
}) {
  const { api } = usePortal();
  const [limit, setLimit] = useState(apiKey.rateLimit ? String(apiKey.rateLimit.limit) : '');
  const [seconds, setSeconds] = useState(apiKey.rateLimit ? String(apiKey.rateLimit.window) : '');
  const { busy, error, run } = useSubmit();
  const save = async (rateLimit: RateLimit | null) => {
    await run(async () => {
      const answer = await api.patch<{ key: ApiKeyView }>(`/keys/${apiKey.id}`, { rateLimit });
      onSaved(answer.key);
    });
  };
  return (
    <DialogBox title={`Rate limit of “${apiKey.name}”`} onClose={onClose}>
      <form
        noValidate
        onSubmit={(event) => {
          event.preventDefault();
          void save({ limit: Number(limit), window: Number(seconds) });
        }}
      >
        <ErrorNotice error={error} />
        <RateLimitFields
          limit={limit}
          seconds={seconds}
          onLimit={setLimit}
          onSeconds={setSeconds}
          error={error ? rateLimitError(error) : undefined}
        />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            Save rate limit
          </button>
          {apiKey.rateLimit ? (
            <button type="button" disabled={busy} onClick={() => void save(null)}>
              Use the default
            </button>
          ) : null}
          <button type="button" onClick={onClose}>
            Cancel
          </button>
        </div>
      </form>
    </DialogBox>
  );
}
