import { useState } from 'preact/hooks';

/**
 * Copies `text` to the clipboard, and says so beside it for a moment's reading (and to screen
 * readers). `what` names it: "Copy event ID".
 */
export function CopyButton({ text, what }: { text: string; what: string }) {
  const [said, setSaid] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied');
    } catch {
      setSaid('Select the text to copy it');
    }
  };
  return (
    <span class="copy">
      <button type="button" class="small-button" onClick={() => void copy()}>
        Copy<span class="visually-hidden"> {what}</span>
      </button>
      <span role="status" class="muted small">
        {said}
      </span>
    </span>
  );
}
