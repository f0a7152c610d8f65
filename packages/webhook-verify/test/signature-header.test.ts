import {
  MAX_HEADER_ENTRIES,
  MAX_HEADER_LENGTH,
  parseSignatureHeader,
  verify,
  verifyAsync,
  WebhookVerificationError,
} from '@keyhook/webhook-verify';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { eventBody, hmacHex, SECRET } from './wire-format.js';

const hex = (byte: number) => byte.toString(16).padStart(2, '0').repeat(32);
const codeOf = (action: () => unknown): string => {
  try {
    action();
    return 'ok';
  } catch (error) {
    return error instanceof WebhookVerificationError ? error.code : `threw ${String(error)}`;
  }
};

describe('parseSignatureHeader', () => {
  it('gives t and every v1 as 32 bytes, in header order', () => {
    const parsed = parseSignatureHeader(`v1=${hex(1)},t=1767225600,v0=x,v1=${hex(255).toUpperCase()}`);
    expect(parsed.timestamp).toBe(1767225600);
    expect(parsed.signatures.map((bytes) => Buffer.from(bytes).toString('hex'))).toEqual([hex(1), hex(255)]);
  });

  it('treats an absent, null, empty or blank header as missing_signature', () => {
    for (const value of [undefined, null, '', ' \t ', []]) {
      expect(codeOf(() => parseSignatureHeader(value))).toBe('missing_signature');
    }
  });

  it('joins a header Node hands over as string[] (repeated headers), so two t are malformed', () => {
    expect(parseSignatureHeader(['t=1767225600', `v1=${hex(2)}`]).timestamp).toBe(1767225600);
    expect(codeOf(() => parseSignatureHeader([`t=1,v1=${hex(2)}`, `t=2,v1=${hex(2)}`]))).toBe(
      'malformed_header',
    );
  });

  it('refuses a value that is not a header with a TypeError', () => {
    expect(() => parseSignatureHeader(42 as unknown as string)).toThrow(TypeError);
  });

  it(`bounds the work: ${MAX_HEADER_LENGTH} characters and ${MAX_HEADER_ENTRIES} entries at most`, () => {
    const base = `t=1767225600,v1=${hex(3)},v0=`;
    const atLimit = base + 'x'.repeat(MAX_HEADER_LENGTH - base.length);
    expect(codeOf(() => parseSignatureHeader(atLimit))).toBe('ok');
    expect(codeOf(() => parseSignatureHeader(`${atLimit}x`))).toBe('malformed_header');
    expect(codeOf(() => parseSignatureHeader(`t=1,v1=${hex(3)}${',v0=x'.repeat(100_000)}`))).toBe(
      'malformed_header',
    );
    const manySignatures = [`t=1767225600`, ...Array(MAX_HEADER_ENTRIES - 1).fill(`v1=${hex(4)}`)].join(',');
    expect(parseSignatureHeader(manySignatures).signatures).toHaveLength(MAX_HEADER_ENTRIES - 1);
    expect(codeOf(() => parseSignatureHeader(`${manySignatures},v1=${hex(4)}`))).toBe('malformed_header');
  });

  it('never throws anything but missing_signature or malformed_header, whatever the input', () => {
    const piece = fc.oneof(
      fc.constantFrom('t', 'v1', 'v0', '=', ',', ' ', '\t', '1767225600', hex(9), '-', 'e', '.', ''),
      fc.string({ maxLength: 8 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 24 }), (pieces) => {
        expect(['ok', 'missing_signature', 'malformed_header']).toContain(
          codeOf(() => parseSignatureHeader(pieces.join(''))),
        );
      }),
      { numRuns: 2000 },
    );
  });

  it('parses any well-formed header, whatever the order and optional whitespace', () => {
    const ows = fc.constantFrom('', ' ', '\t', '  ');
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 5 }),
        fc.array(ows, { minLength: 30, maxLength: 30 }),
        fc.boolean(),
        (t, bytes, spaces, tFirst) => {
          const v1 = bytes.map((byte) => `v1${spaces.pop()}=${spaces.pop()}${hex(byte)}`);
          const entries = tFirst ? [`t=${t}`, ...v1] : [...v1, `t=${t}`];
          const header = entries.map((entry) => `${spaces.pop()}${entry}${spaces.pop()}`).join(',');
          const parsed = parseSignatureHeader(header);
          expect(parsed.timestamp).toBe(t);
          expect(parsed.signatures.map((s) => Buffer.from(s).toString('hex'))).toEqual(bytes.map(hex));
        },
      ),
    );
  });
});

describe('verify and verifyAsync agree', () => {
  it('on the outcome for random headers around one genuine signature', async () => {
    const body = eventBody();
    const t = 1767225600;
    const good = hmacHex(SECRET, t, body);
    const entry = fc.constantFrom(
      `t=${t}`,
      `t=${t + 1}`,
      `v1=${good}`,
      `v1=${hex(7)}`,
      'v0=x',
      't=1e9',
      ' ',
      '',
    );
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { maxLength: 6 }), async (entries) => {
        const header = entries.join(',');
        const options = { now: t * 1000 };
        const sync = codeOf(() => verify(body, header, SECRET, options));
        const async = await verifyAsync(body, header, SECRET, options).then(
          () => 'ok',
          (error: WebhookVerificationError) => error.code,
        );
        expect(async).toBe(sync);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the canonical fast path', () => {
  it('parses t=…,v1=… exactly as the general path does', async () => {
    const { parseSignatureHeader } = await import('../src/signature-header.js');
    const v1 = 'aB'.repeat(32);
    const fast = parseSignatureHeader(`t=1767225600,v1=${v1}`);
    const general = parseSignatureHeader(` t=1767225600 ,\tv1 = ${v1} `);
    expect(fast).toEqual(general);
    expect(fast.timestamp).toBe(1767225600);
    expect(Buffer.from(fast.signatures[0]!).toString('hex')).toBe(v1.toLowerCase());
    // Past the safe integers: not taken by the fast path, refused by the general one.
    expect(() => parseSignatureHeader(`t=9999999999999999,v1=${v1}`)).toThrow(/positive unix seconds/);
  });
});
