// C0 controls but tab and newline, DEL, the C1 controls, and the bidirectional marks, embeddings,
// overrides and isolates: characters that hide text or make it read otherwise than it is.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this shows.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` with each character that would hide or reorder what is shown written as a visible
 * `\u202E`-style escape, so a receiver's answer or a payload reads as it is (docs/decisions.md §1.5).
 */
export function visibleText(text: string): string {
  return text.replace(
    HIDDEN,
    (char) => `\\u${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`,
  );
}
