import { useId, useState } from 'preact/hooks';

/**
 * A secret shown this once (a key, a signing secret): a read-only field to select, a copy button,
 * and the warning that it will not be shown again.
 */
export function SecretReveal({
  label,
  copyLabel,
  secret,
  onDone,
}: {
  label: string;
  /** The copy button's text ("Copy key"), which names what it copies. */
  copyLabel: string;
  secret: string;
  onDone: () => void;
}) {
  const id = useId();
  const [copied, setCopied] = useState<string>('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied('Copied to the clipboard.');
    } catch {
      setCopied('Copying is not allowed here: select the text and copy it yourself.');
    }
  };
  return (
    <div class="secret">
      <p class="warning">
        <strong>Copy it now.</strong> It is shown only this once; if it is lost, rotate it for a new one.
      </p>
      <label for={id}>{label}</label>
      <input id={id} class="mono" readOnly value={secret} onFocus={(event) => event.currentTarget.select()} />
      <div class="actions">
        <button type="button" class="primary" onClick={copy}>
          {copyLabel}
        </button>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
      <p role="status" class="muted">
        {copied}
      </p>
    </div>
  );
}
