/** A passage's length, in characters, before the next one starts. */
export const PASSAGE_CHARS = 1200;

/**
 * An item's text cut into passages for a chatbot to index: paragraphs kept whole while they
 * fit, a long paragraph split at sentence ends (or, failing those, at spaces, or hard), and
 * the title leading the first passage. Every passage is non-empty and at most PASSAGE_CHARS
 * long; joined with single spaces they hold every word of the item in order.
 */
export function passagesOf(title: string | null, content: string, max = PASSAGE_CHARS): string[] {
  const pieces = splitLong([title, ...content.split(/\n\s*\n/)].filter(nonBlank).map(squash), max);
  const passages: string[] = [];
  let current = '';
  for (const piece of pieces) {
    if (current === '') current = piece;
    else if (current.length + 1 + piece.length <= max) current = `${current} ${piece}`;
    else {
      passages.push(current);
      current = piece;
    }
  }
  if (current !== '') passages.push(current);
  return passages;
}

function nonBlank(text: string | null): text is string {
  return text !== null && text.trim() !== '';
}

function squash(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Pieces of at most `max` characters: sentence ends first, then spaces, then a hard cut. */
function splitLong(pieces: string[], max: number): string[] {
  const out: string[] = [];
  for (const piece of pieces) {
    let rest = piece;
    while (rest.length > max) {
      const window = rest.slice(0, max + 1);
      let cut = Math.max(window.lastIndexOf('. '), window.lastIndexOf('! '), window.lastIndexOf('? '));
      cut = cut > 0 ? cut + 1 : window.lastIndexOf(' ');
      if (cut <= 0) cut = max;
      out.push(rest.slice(0, cut).trim());
      rest = rest.slice(cut).trim();
    }
    if (rest !== '') out.push(rest);
  }
  return out;
}
