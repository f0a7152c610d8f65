import { deliverOneEvent } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { verify } from '../src/index.js';
import { verifyAsync } from '../src/web.js';
import { hmacHex } from './sign.js';

describe('interop with a real delivery', () => {
  it('a delivery sent by the worker to a receiver on 127.0.0.1 verifies here, and agrees with an independent HMAC', async () => {
    const { request, secret, eventId } = await deliverOneEvent({
      type: 'generation.published',
      data: { generation: 7, note: 'ünïcödé ✓' },
    });
    const header = String(request.headers['x-chatbot-signature']);
    const t = Number(/^t=(\d+),/.exec(header)![1]);
    expect(header).toBe(`t=${t},v1=${hmacHex(secret, t, request.body)}`);
    const event = verify(request.body, header, secret);
    expect(event).toMatchObject({ id: eventId, type: 'generation.published', data: { generation: 7 } });
    expect(request.headers['x-chatbot-event-id']).toBe(event.id);
    expect(verify(request.body, request.headers, secret).id).toBe(eventId);
    const viaWeb = await verifyAsync(new TextEncoder().encode(request.body), header, secret);
    expect(viaWeb.id).toBe(eventId);
    expect(() => verify(`${request.body} `, header, secret)).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });
});

describe('interop with a sender that names its own headers', () => {
  it('core delivers under delivery.headers, and verify reads the same names from the request’s headers', async () => {
    const headers = { signature: 'x-acme-signature', eventId: 'x-acme-event-id' };
    const { request, secret, eventId } = await deliverOneEvent(
      { type: 'invoice.paid', data: { invoiceId: 'inv_1' } },
      { headers },
    );
    expect(request.headers['x-chatbot-signature']).toBeUndefined();
    const event = verify<{ 'invoice.paid': { invoiceId: string } }>(request.body, request.headers, secret, {
      headers,
    });
    expect(event).toMatchObject({ id: eventId, data: { invoiceId: 'inv_1' } });
    const fetchHeaders = new Headers(request.headers as Record<string, string>);
    expect((await verifyAsync(request.body, fetchHeaders, secret, { headers })).id).toBe(eventId);
    // The same delivery read under the default names has no signature header.
    expect(() => verify(request.body, request.headers, secret)).toThrow(
      expect.objectContaining({ code: 'missing_signature' }),
    );
  });
});

describe('interop with a sender inside a secret rotation', () => {
  const event = { type: 'generation.published', data: { generation: 8 } };

  it('inside the overlap the delivery verifies with the old secret, the new one, or a list holding either', async () => {
    const { request, secret, previousSecret, eventId } = await deliverOneEvent(event, {
      rotate: { overlapSeconds: 3600 },
    });
    const header = String(request.headers['x-chatbot-signature']);
    const t = Number(/^t=(\d+),/.exec(header)![1]);
    expect(header).toBe(
      `t=${t},v1=${hmacHex(secret, t, request.body)},v1=${hmacHex(previousSecret!, t, request.body)}`,
    );
    expect(verify(request.body, request.headers, secret).id).toBe(eventId);
    expect(verify(request.body, request.headers, previousSecret!).id).toBe(eventId);
    // A receiver in the middle of its own rotation holds two secrets; either one matching passes.
    expect(verify(request.body, request.headers, ['whsec_unrelated', previousSecret!]).id).toBe(eventId);
    expect(() => verify(request.body, request.headers, 'whsec_unrelated')).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });

  it('after a rotation without overlap only the new secret verifies', async () => {
    const { request, secret, previousSecret } = await deliverOneEvent(event, {
      rotate: { overlapSeconds: 0 },
    });
    expect(verify(request.body, request.headers, secret).type).toBe('generation.published');
    expect(() => verify(request.body, request.headers, previousSecret!)).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });
});
