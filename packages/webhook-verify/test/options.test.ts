import { type VerifyOptions, verify, verifyAsync, type WebhookSecret } from '@keyhook/webhook-verify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { eventBody, OTHER_SECRET, SECRET, signatureHeader } from './wire-format.js';

const T = 1767225600;
const body = eventBody();
const header = signatureHeader(body, SECRET, T);

type Run = (
  rawBody: unknown,
  header: string | undefined,
  secret: unknown,
  options?: VerifyOptions,
) => Promise<unknown>;
const runners: [string, Run][] = [
  ['verify', async (b, h, s, o) => verify(b as string, h, s as WebhookSecret, o)],
  ['verifyAsync', (b, h, s, o) => verifyAsync(b as string, h, s as WebhookSecret, o)],
];

afterEach(() => {
  vi.useRealTimers();
});

describe.each(runners)('%s options and arguments', (_name, run) => {
  it('takes now as a Date, as epoch milliseconds, or as a function giving either', async () => {
    for (const now of [
      new Date(T * 1000),
      T * 1000 + 999,
      () => T * 1000,
      () => new Date(T * 1000 + 300_000),
    ]) {
      await expect(run(body, header, SECRET, { now })).resolves.toMatchObject({ id: 'evt_test_1' });
    }
    await expect(run(body, header, SECRET, { now: () => (T + 301) * 1000 })).rejects.toMatchObject({
      code: 'timestamp_out_of_tolerance',
    });
  });

  it('defaults now to Date.now', async () => {
    vi.useFakeTimers({ now: (T + 300) * 1000 });
    await expect(run(body, header, SECRET)).resolves.toMatchObject({ type: 'invoice.paid' });
    vi.setSystemTime((T + 301) * 1000);
    await expect(run(body, header, SECRET)).rejects.toMatchObject({ code: 'timestamp_out_of_tolerance' });
    vi.setSystemTime((T - 301) * 1000);
    await expect(run(body, header, SECRET)).rejects.toMatchObject({ code: 'timestamp_out_of_tolerance' });
  });

  it('applies toleranceSeconds both ways; 0 accepts only the same second', async () => {
    const at = (seconds: number, toleranceSeconds: number) =>
      run(body, header, SECRET, { now: seconds * 1000, toleranceSeconds });
    await expect(at(T + 10, 10)).resolves.toBeDefined();
    await expect(at(T - 10, 10)).resolves.toBeDefined();
    await expect(at(T + 11, 10)).rejects.toMatchObject({ code: 'timestamp_out_of_tolerance' });
    await expect(at(T - 11, 10)).rejects.toMatchObject({ code: 'timestamp_out_of_tolerance' });
    await expect(at(T + 0.999, 0)).resolves.toBeDefined();
    await expect(at(T + 1, 0)).rejects.toMatchObject({ code: 'timestamp_out_of_tolerance' });
  });

  it('refuses a tolerance that is negative, not finite or not a number (no way to switch it off)', async () => {
    for (const toleranceSeconds of [-1, Number.NaN, Number.POSITIVE_INFINITY, '300' as unknown as number]) {
      await expect(run(body, header, SECRET, { now: T * 1000, toleranceSeconds })).rejects.toThrow(TypeError);
    }
  });

  it('refuses a now that is not a time', async () => {
    for (const now of ['2026-01-01' as unknown as number, () => Number.NaN, new Date('nope')]) {
      await expect(run(body, header, SECRET, { now })).rejects.toThrow(TypeError);
    }
  });

  it('refuses secrets that cannot be right, without echoing them', async () => {
    const stripped = SECRET.slice('whsec_'.length);
    for (const secret of [undefined, '', 'whsec_', stripped, [], [SECRET, 42], [stripped]]) {
      const error = await run(body, header, secret, { now: T * 1000 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toMatch(/secret/);
      expect((error as Error).message).not.toContain(stripped);
    }
  });

  it('accepts a list of secrets in any order', async () => {
    for (const secret of [[OTHER_SECRET, SECRET], [SECRET, OTHER_SECRET], [SECRET]]) {
      await expect(run(body, header, secret, { now: T * 1000 })).resolves.toBeDefined();
    }
  });

  it('refuses a parsed body with a TypeError that names the fix', async () => {
    for (const parsed of [JSON.parse(body), undefined, null, new ArrayBuffer(4), 42]) {
      await expect(run(parsed, header, SECRET, { now: T * 1000 })).rejects.toThrow(/express\.raw/);
    }
  });

  it('reports argument mistakes before anything about the delivery', async () => {
    await expect(run({}, undefined, SECRET)).rejects.toThrow(TypeError);
    await expect(run(body, undefined, 'not-a-secret')).rejects.toThrow(TypeError);
    await expect(run(body, undefined, SECRET, { toleranceSeconds: -5 })).rejects.toThrow(TypeError);
    await expect(run(body, undefined, SECRET)).rejects.toMatchObject({ code: 'missing_signature' });
  });

  it('accepts a Buffer and a Uint8Array view into a larger buffer', async () => {
    const framed = Buffer.from(`xx${body}yy`);
    const view = new Uint8Array(framed.buffer, framed.byteOffset + 2, framed.length - 4);
    await expect(run(Buffer.from(body), header, SECRET, { now: T * 1000 })).resolves.toBeDefined();
    await expect(run(view, header, SECRET, { now: T * 1000 })).resolves.toBeDefined();
  });

  it('returns the event typed by an event map', async () => {
    type Events = { 'invoice.paid': { invoiceId: string } };
    const typed = await verifyAsync<Events>(body, header, SECRET, { now: T * 1000 });
    expect(typed.data.invoiceId).toBe('inv_1');
    expect(verify<Events>(body, header, SECRET, { now: T * 1000 }).data.invoiceId).toBe('inv_1');
  });
});

describe('a body string with a lone surrogate', () => {
  it('is refused as invalid_payload, though its UTF-8 form carries a genuine signature', async () => {
    const { verify, verifySignature } = await import('../src/index.js');
    const { verifyAsync } = await import('../src/web.js');
    const { signatureHeader, SECRET } = await import('./wire-format.js');
    const signed =
      '{"id":"evt_s","type":"invoice.paid","createdAt":"2026-01-01T00:00:00.000Z","data":{"s":"\uFFFD"}}';
    const forged = signed.replace('\uFFFD', '\uD800');
    const header = signatureHeader(signed);
    expect(verify(signed, header, SECRET).data).toEqual({ s: '\uFFFD' });
    for (const check of [
      () => verify(forged, header, SECRET),
      () => verifySignature(forged, header, SECRET),
    ]) {
      expect(check).toThrow(expect.objectContaining({ code: 'invalid_payload' }));
    }
    await expect(verifyAsync(forged, header, SECRET)).rejects.toMatchObject({ code: 'invalid_payload' });
  });
});
