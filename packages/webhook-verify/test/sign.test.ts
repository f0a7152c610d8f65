import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  isWebhookVerificationError,
  sign,
  signAsync,
  signEvent,
  signEventAsync,
  verify,
  type WebhookEvent,
} from '@keyhook/webhook-verify';
import * as web from '@keyhook/webhook-verify/web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hmacHex, OTHER_SECRET, SECRET, signatureHeader } from './wire-format.js';

const T = 1767225600;
const body =
  '{"id":"evt_sign_1","type":"invoice.paid","createdAt":"2026-01-01T00:00:00.000Z","data":{"a":"é"}}';

describe('sign: the header a sender would send, for a receiver’s own tests', () => {
  it('is the wire format, computed independently, with node:crypto and with WebCrypto alike', async () => {
    expect(sign(body, SECRET, { now: T * 1000 })).toBe(signatureHeader(body, SECRET, T));
    expect(sign(new TextEncoder().encode(body), SECRET, { now: new Date(T * 1000 + 999) })).toBe(
      signatureHeader(body, SECRET, T),
    );
    expect(await signAsync(body, SECRET, { now: () => T * 1000 })).toBe(signatureHeader(body, SECRET, T));
    expect(await web.signAsync(body, SECRET, { now: T * 1000 })).toBe(signatureHeader(body, SECRET, T));
  });

  it('reproduces the valid vector of vectors.json', () => {
    const file = JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8')) as {
      now: number;
      vectors: { name: string; body: string; header: string; secret: string }[];
    };
    const valid = file.vectors.find((vector) => vector.name === 'valid')!;
    expect(sign(valid.body, valid.secret, { now: file.now * 1000 })).toBe(valid.header);
  });

  it('signs now by default, and verify accepts what it signs', () => {
    const before = Math.floor(Date.now() / 1000);
    const header = sign(body, SECRET);
    const t = Number(/^t=(\d+),/.exec(header)?.[1]);
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(before + 1);
    expect(verify(body, header, SECRET).id).toBe('evt_sign_1');
  });

  it('gives one v1 per secret, as a sender rotating its secret sends, each verifiable alone', async () => {
    const header = sign(body, [SECRET, OTHER_SECRET], { now: T * 1000 });
    expect(header).toBe(`t=${T},v1=${hmacHex(SECRET, T, body)},v1=${hmacHex(OTHER_SECRET, T, body)}`);
    expect(await signAsync(body, [SECRET, OTHER_SECRET], { now: T * 1000 })).toBe(header);
    for (const secret of [SECRET, OTHER_SECRET]) {
      expect(verify(body, header, secret, { now: T * 1000 }).id).toBe('evt_sign_1');
    }
  });

  it('makes a stale header when asked, which verify refuses', () => {
    const header = sign(body, SECRET, { now: Date.now() - 301_000 });
    expect(() => verify(body, header, SECRET)).toThrow(
      expect.objectContaining({ code: 'timestamp_out_of_tolerance' }),
    );
  });

  it('throws a TypeError for a secret, body or time it cannot sign with', async () => {
    for (const call of [
      () => sign(body, 'not-a-secret'),
      () => sign(body, 'whsec_'),
      () => sign(body, []),
      () => sign({ parsed: true } as unknown as string, SECRET),
      () => sign('{"s":"\uD800"}', SECRET),
      () => sign(body, SECRET, { now: Number.NaN }),
      () => sign(body, SECRET, { now: 0 }),
      () => sign(body, SECRET, { now: '2026' as unknown as number }),
    ]) {
      expect(call).toThrow(TypeError);
    }
    await expect(signAsync(body, 'not-a-secret')).rejects.toThrow(TypeError);
  });
});

type Events = {
  'invoice.paid': { invoiceId: string; amountCents: number };
  'invoice.voided': { invoiceId: string };
};

describe('signEvent: a whole delivery, body and headers', () => {
  it('serialises id, type, createdAt and data in keyhook’s order, signed as verify checks', () => {
    const delivery = signEvent<Events>(
      { type: 'invoice.paid', data: { invoiceId: 'inv_1', amountCents: 1200 }, id: 'evt_paid_1' },
      SECRET,
      { now: T * 1000 },
    );
    expect(delivery.body).toBe(
      '{"id":"evt_paid_1","type":"invoice.paid","createdAt":"2026-01-01T00:00:00.000Z","data":{"invoiceId":"inv_1","amountCents":1200}}',
    );
    expect(delivery.headers).toEqual({
      'content-type': 'application/json',
      'keyhook-event-id': 'evt_paid_1',
      'keyhook-signature': signatureHeader(delivery.body, SECRET, T),
    });
    expect(delivery.event).toEqual(JSON.parse(delivery.body));
    expect(verify<Events>(delivery.body, delivery.headers, SECRET, { now: T * 1000 })).toEqual(
      delivery.event,
    );
  });

  it('makes a fresh id and the current time when not given', () => {
    const first = signEvent({ type: 'thing.happened', data: {} }, SECRET);
    const second = signEvent({ type: 'thing.happened', data: {} }, SECRET);
    expect(first.event.id).toMatch(/^evt_test_[0-9a-f]{24}$/);
    expect(second.event.id).not.toBe(first.event.id);
    expect(Math.abs(Date.parse(first.event.createdAt) - Date.now())).toBeLessThan(5_000);
  });

  it('uses the sender’s own header names, and verify reads them back', async () => {
    const headers = { signature: 'x-acme-signature', eventId: 'x-acme-event-id' };
    const delivery = await signEventAsync<Events>(
      { type: 'invoice.voided', data: { invoiceId: 'inv_2' } },
      SECRET,
      { headers },
    );
    expect(Object.keys(delivery.headers).sort()).toEqual([
      'content-type',
      'x-acme-event-id',
      'x-acme-signature',
    ]);
    expect(verify<Events>(delivery.body, delivery.headers, SECRET, { headers }).type).toBe('invoice.voided');
    expect(() => verify(delivery.body, delivery.headers, SECRET)).toThrow(
      expect.objectContaining({ code: 'missing_signature' }),
    );
  });

  it('throws a TypeError for an event that is not { type, data }', () => {
    for (const event of [
      null,
      { type: '', data: {} },
      { type: 'a.b', data: [] },
      { type: 'a.b', data: null },
      { type: 'a.b', data: {}, id: 7 },
      { type: 'a.b', data: {}, createdAt: 7 },
    ]) {
      expect(() => signEvent(event as never, SECRET)).toThrow(TypeError);
    }
  });
});

describe('a receiver’s own test, with no sender', () => {
  const received: WebhookEvent<Events>[] = [];
  let server: Server;
  let url = '';

  // The receiver under test: node:http, raw bytes, whole headers.
  beforeAll(async () => {
    server = createServer(async (request: IncomingMessage, response) => {
      const chunks: Buffer[] = [];
      for await (const chunk of request) chunks.push(chunk as Buffer);
      try {
        received.push(verify<Events>(Buffer.concat(chunks), request.headers, SECRET));
        response.writeHead(204).end();
      } catch (error) {
        if (!isWebhookVerificationError(error)) throw error;
        response
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: error.code }));
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('posts a signed event over HTTP and sees it accepted; a wrong secret is refused', async () => {
    const delivery = signEvent<Events>(
      { type: 'invoice.paid', data: { invoiceId: 'inv_3', amountCents: 5 } },
      SECRET,
    );
    const accepted = await fetch(url, { method: 'POST', body: delivery.body, headers: delivery.headers });
    expect(accepted.status).toBe(204);
    expect(received).toEqual([delivery.event]);
    const forged = signEvent<Events>({ type: 'invoice.voided', data: { invoiceId: 'inv_3' } }, OTHER_SECRET);
    const refused = await fetch(url, { method: 'POST', body: forged.body, headers: forged.headers });
    expect([refused.status, await refused.json()]).toEqual([400, { error: 'signature_mismatch' }]);
    expect(received).toHaveLength(1);
  });
});
