import { describe, expect, it } from 'vitest';
import { PASSAGE_CHARS, passagesOf } from '../src/data-plane/chunk.js';
import { countChanges, diffItems, isNoop } from '../src/data-plane/diff.js';
import { contentHash } from '../src/data-plane/hash.js';

describe('passages (what a generation gives a chatbot to index)', () => {
  it('keeps short paragraphs together, the title first, and every word in order', () => {
    const passages = passagesOf('Leave', 'Twenty-five days a year.\n\nAsk your manager first.');
    expect(passages).toEqual(['Leave Twenty-five days a year. Ask your manager first.']);
  });

  it('cuts long text at sentence ends, never over the limit, losing no word', () => {
    const sentence = 'The quick brown fox jumps over the lazy dog. ';
    const content = sentence.repeat(100) + '\n\n' + 'x'.repeat(3000);
    const passages = passagesOf(null, content);
    expect(passages.length).toBeGreaterThan(3);
    for (const passage of passages) {
      expect(passage.length).toBeGreaterThan(0);
      expect(passage.length).toBeLessThanOrEqual(PASSAGE_CHARS);
    }
    expect(passages[0]!.endsWith('dog.')).toBe(true); // a sentence end, not mid-word
    // Nothing lost or reordered: the same characters apart from white space.
    expect(passages.join('').replace(/\s+/g, '')).toBe(content.replace(/\s+/g, ''));
    // The unbroken run of 3,000 characters is cut hard, at the limit.
    expect(passages.slice(-3).map((p) => p.length)).toEqual([PASSAGE_CHARS, PASSAGE_CHARS, 600]);
  });

  it('gives no passage for blank content', () => {
    expect(passagesOf(null, ' \n\n \t')).toEqual([]);
    expect(passagesOf('Title only', '')).toEqual(['Title only']);
  });
});

describe('the diff and the content hash', () => {
  it('names every key once: added, updated, unchanged, removed, in key order', () => {
    const changes = diffItems(
      [
        { key: 'b', contentHash: 'h2' },
        { key: 'a', contentHash: 'h1' },
        { key: 'd', contentHash: 'h4' },
      ],
      [
        { key: 'a', contentHash: 'h1' },
        { key: 'b', contentHash: 'old' },
        { key: 'c', contentHash: 'h3' },
      ],
    );
    expect(changes.map((c) => `${c.change} ${c.key}`)).toEqual([
      'unchanged a',
      'updated b',
      'removed c',
      'added d',
    ]);
    expect(changes[1]).toEqual({ key: 'b', change: 'updated', contentHash: 'h2', previousHash: 'old' });
    const counts = countChanges(changes);
    expect(counts).toEqual({ added: 1, updated: 1, removed: 1, unchanged: 1 });
    expect(isNoop(counts)).toBe(false);
    expect(isNoop({ added: 0, updated: 0, removed: 0, unchanged: 9 })).toBe(true);
  });

  it('hashes every field, and not the order of metadata keys', () => {
    const base = { title: 'T', content: 'C', url: null, metadata: { a: 1, b: [2] } };
    expect(contentHash(base)).toBe(contentHash({ ...base, metadata: { b: [2], a: 1 } }));
    for (const changed of [
      { title: 'T2' },
      { content: 'C2' },
      { url: 'https://x.example' },
      { metadata: null },
    ]) {
      expect(contentHash({ ...base, ...changed })).not.toBe(contentHash(base));
    }
  });
});
