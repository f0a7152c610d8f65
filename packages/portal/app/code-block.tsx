import { visibleText } from './visible-text.js';

/**
 * Preformatted text that may scroll (JSON, a response body), in a named region that takes
 * focus, so a keyboard alone can scroll it. Hidden characters are shown escaped.
 */
export function CodeBlock({ label, text, small }: { label: string; text: string; small?: boolean }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must take focus to be scrolled by keyboard.
    <section class={small ? 'code small' : 'code'} aria-label={label} tabIndex={0}>
      <pre>{visibleText(text)}</pre>
    </section>
  );
}
