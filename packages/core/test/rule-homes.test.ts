import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ENDPOINT_RATE_RULE } from '../src/delivery/endpoint-rate.js';
import { DELIVERY_RULES } from '../src/delivery/rules.js';

// docs/decisions.md §10.4: auto-disable, hold-on-disabled and the active-twin rule are decided in
// core; a store applies them with core's functions and values and spells out none of what they
// own. The conformance suite shows the rules hold on every store; this shows where they live.

const source = (url: URL) => readFileSync(url, 'utf8');

/** A store's sources, by path under src/, without comments (which may name what the code must not). */
function storeSources(pkg: string): Map<string, string> {
  const dir = new URL(`../../${pkg}/src/`, import.meta.url);
  return new Map(
    readdirSync(dir, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => [file, withoutComments(source(new URL(file, dir)))]),
  );
}

/** Block comments, and line comments that start a line or follow a space (a URL's `//` stays). */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');
}

/** The memory store from its first webhook method on: before it, API keys compare their own 'active'. */
function memoryWebhookPart(): string {
  const text = withoutComments(source(new URL('../src/store/memory.ts', import.meta.url)));
  const start = text.indexOf('async insertWebhook(');
  expect(start).toBeGreaterThan(0);
  return text.slice(start);
}

const quoted = (word: string) => new RegExp(`['"\`]${word}['"\`]`, 'g');

/** A failure count compared with a number of the store's own (0, the reset, is not a threshold), or core's threshold read. */
const THRESHOLD = [
  /\b(?:\w*failures?|count)\s*(?:[<>]=?|[!=]==?|<>)\s*[1-9]/i,
  /autoDisable\.after|autoDisableAfter|AUTO_DISABLE/,
];

/**
 * The endpoint rate's rule spelled or bound by a store: its early and late shares read (a store
 * reads only `spread`, how many deliveries to lock), or written as numbers, an interval worked out
 * from the rate (1000 / perSecond), or the slot's formula in SQL.
 */
const PACING = [
  /\.(?:early|late)\b/,
  ...[ENDPOINT_RATE_RULE.early, ENDPOINT_RATE_RULE.late].map(
    (share) => new RegExp(`(?<![\\d.])${String(share).replace('.', '\\.')}(?!\\d)`),
  ),
  /\b1000(?:\.0*)?(?:::\w+)?\s*\//,
  /greatest\([^)]*next_?at/i,
];

/** Statuses and reasons only the rules name: an endpoint's statuses and the disable reasons. */
const RULE_WORDS = [
  DELIVERY_RULES.hold.endpointStatus,
  DELIVERY_RULES.autoDisable.reason,
  'manual',
  'active',
];

/** An API key's status is 'active' too: the operations on keys, and their row, may say so. */
const isKeyFile = (file: string) => /api-key|(^|\/)key-row\.ts$/.test(file);

/**
 * Schema, not rule: the operations that may name the held state, because their statements must
 * repeat a partial index's predicate (`status = 'held'`) word for word for the planner to use it.
 */
const HELD_AS_SCHEMA = new Set([
  'operations/expire-held-deliveries.ts',
  'operations/count-queued-deliveries.ts',
]);

describe('each delivery rule has one home, in core (docs/decisions.md §10.4)', () => {
  const stores = ['store-sqlite', 'store-postgres'].map((pkg) => [pkg, storeSources(pkg)] as const);

  for (const [pkg, files] of stores) {
    it(`${pkg} names no endpoint status or disable reason of the rules`, () => {
      const found: string[] = [];
      for (const [file, text] of files) {
        for (const word of RULE_WORDS) {
          if (word === 'active' && isKeyFile(file)) continue;
          if (quoted(word).test(text)) found.push(`${file}: '${word}'`);
        }
      }
      expect(found).toEqual([]);
    });

    it(`${pkg} names the held state only where a partial index's predicate needs it`, () => {
      const found: string[] = [];
      let schemaUses = 0;
      for (const [file, text] of files) {
        for (const _ of text.matchAll(quoted(DELIVERY_RULES.hold.state))) {
          if (HELD_AS_SCHEMA.has(file)) schemaUses++;
          else found.push(file);
        }
      }
      expect(found).toEqual([]);
      expect(schemaUses).toBeGreaterThan(0);
    });

    it(`${pkg} holds no threshold: it asks core's autoDisables, and binds core's values`, () => {
      const all = [...files.values()].join('\n');
      for (const pattern of THRESHOLD) expect(all).not.toMatch(pattern);
      for (const rule of ['autoDisables(', 'queuedOn(', 'claimsTwinKey(', 'twinClaimOf(', 'DELIVERY_RULES'])
        expect(all, rule).toContain(rule);
    });
  }

  for (const [pkg, files] of stores) {
    it(`${pkg} spells neither what an attempt succeeds with nor why a portal link is refused`, () => {
      const all = [...files.values()].join('\n');
      expect(all).not.toMatch(/\b(?:200|299|300)\b(?!\s*(?:ms|attempts|rows|deliveries))/);
      // An API key's status is 'revoked' too: the reasons are looked for where portal sessions are kept.
      const portal = [...files].filter(([file]) => file.includes('portal')).map(([, text]) => text);
      expect(portal.length).toBeGreaterThan(0);
      for (const reason of ['unknown', 'revoked', 'used', 'expired'])
        expect(portal.join('\n')).not.toMatch(quoted(reason));
      for (const rule of ['DELIVERY_RULES.success', 'portalLinkRefusal(']) expect(all, rule).toContain(rule);
    });
  }

  it("each store paces with core's paceEndpoint (docs/decisions.md §8.18), and spells none of its rule", () => {
    const memory = withoutComments(source(new URL('../src/store/memory.ts', import.meta.url)));
    const texts = [
      ...stores.map(([pkg, files]) => [pkg, [...files.values()].join('\n')] as const),
      ['memory', memory],
    ];
    for (const [store, text] of texts) {
      expect(text, store).toContain('paceEndpoint(');
      for (const pattern of PACING) expect(text, `${store}: ${pattern}`).not.toMatch(pattern);
    }
  });

  it('the memory store names no status or reason of the rules, and asks core the same way', () => {
    const text = memoryWebhookPart();
    for (const word of [...RULE_WORDS, DELIVERY_RULES.hold.state]) expect(text).not.toMatch(quoted(word));
    for (const pattern of THRESHOLD) expect(text).not.toMatch(pattern);
    for (const rule of ['autoDisables(', 'queuedOn(', 'twinClaimOf(', 'holdsDeliveries('])
      expect(text, rule).toContain(rule);
  });

  it('core names the threshold once', () => {
    const dir = new URL('../src/', import.meta.url);
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((file) =>
      file.endsWith('.ts'),
    );
    const naming = files.filter((file) => /\bafter: \d/.test(source(new URL(file, dir))));
    expect(naming).toEqual(['delivery/rules.ts']);
  });
});
