import { deliverOneEvent } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { verify } from '../src/index.js';
import { verifyAsync } from '../src/web.js';
import { hmacHex } from './wire-format.js';

// Core's delivery.headers and the verifier's headers option name the same two headers, on both
// sides, as a host and its receivers do: these tests hold whatever either package's defaults are.
const KEYHOOK = { signature: 'keyhook-signature', eventId: 'keyhook-event-id' };

describe('interop with a real delivery', () => {
  it('a delivery sent by the worker to a receiver on 127.0.0.1 verifies here, and agrees with an independent HMAC', async () => {
    const { request, secret, eventId } = await deliverOneEvent(
      { type: 'invoice.paid', data: { invoiceId: 'inv_7', note: 'ünïcödé ✓' } },
      { headers: KEYHOOK },
    );
    const header = String(request.headers['keyhook-signature']);
    const t = Number(/^t=(\d+),/.exec(header)![1]);
    expect(header).toBe(`t=${t},v1=${hmacHex(secret, t, request.body)}`);
    const event = verify(request.body, header, secret);
    expect(event).toMatchObject({ id: eventId, type: 'invoice.paid', data: { invoiceId: 'inv_7' } });
    expect(request.headers['keyhook-event-id']).toBe(event.id);
    expect(verify(request.body, request.headers, secret, { headers: KEYHOOK }).id).toBe(eventId);
    const viaWeb = await verifyAsync(new TextEncoder().encode(request.body), header, secret);
    expect(viaWeb.id).toBe(eventId);
    expect(() => verify(`${request.body} `, header, secret)).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });
});

describe('interop with a sender that names its own headers', () => {
  it('core delivers under delivery.headers, and verify reads the same names from the request’s headers', async () => {
    // The reference server's names, given as a host gives them.
    const headers = { signature: 'x-chatbot-signature', eventId: 'x-chatbot-event-id' };
    const { request, secret, eventId } = await deliverOneEvent(
      { type: 'invoice.paid', data: { invoiceId: 'inv_1' } },
      { headers },
    );
    expect(request.headers['keyhook-signature']).toBeUndefined();
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
  const event = { type: 'invoice.paid', data: { invoiceId: 'inv_8' } };
  const options = { headers: KEYHOOK };

  it('inside the overlap the delivery verifies with the old secret, the new one, or a list holding either', async () => {
    const { request, secret, previousSecret, eventId } = await deliverOneEvent(event, {
      headers: KEYHOOK,
      rotate: { overlapSeconds: 3600 },
    });
    const header = String(request.headers['keyhook-signature']);
    const t = Number(/^t=(\d+),/.exec(header)![1]);
    expect(header).toBe(
      `t=${t},v1=${hmacHex(secret, t, request.body)},v1=${hmacHex(previousSecret!, t, request.body)}`,
    );
    expect(verify(request.body, request.headers, secret, options).id).toBe(eventId);
    expect(verify(request.body, request.headers, previousSecret!, options).id).toBe(eventId);
    // A receiver in the middle of its own rotation holds two secrets; either one matching passes.
    expect(verify(request.body, request.headers, ['whsec_unrelated', previousSecret!], options).id).toBe(
      eventId,
    );
    expect(() => verify(request.body, request.headers, 'whsec_unrelated', options)).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });

  it('after a rotation without overlap only the new secret verifies', async () => {
    const { request, secret, previousSecret } = await deliverOneEvent(event, {
      headers: KEYHOOK,
      rotate: { overlapSeconds: 0 },
    });
    expect(verify(request.body, request.headers, secret, options).type).toBe('invoice.paid');
    expect(() => verify(request.body, request.headers, previousSecret!, options)).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });
});

describe('interop with a Standard Webhooks endpoint (docs/decisions.md §6.9)', () => {
  const event = { type: 'invoice.paid', data: { invoiceId: 'inv_9' } };

  it('a delivery signed the Standard Webhooks way verifies here by its headers, with the secret as shown', async () => {
    const { request, secret, eventId } = await deliverOneEvent(event, {
      signatureScheme: 'standard-webhooks',
    });
    expect(request.headers['webhook-id']).toBe(eventId);
    expect(verify(request.body, request.headers, secret)).toMatchObject({ id: eventId, data: event.data });
    expect(verify(request.body, request.headers, secret, { scheme: 'standard-webhooks' }).id).toBe(eventId);
    const fetchHeaders = new Headers(request.headers as Record<string, string>);
    expect((await verifyAsync(request.body, fetchHeaders, secret)).id).toBe(eventId);
    expect(() => verify(`${request.body} `, request.headers, secret)).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });

  it('inside a rotation overlap it verifies with the old secret and with the new one', async () => {
    const { request, secret, previousSecret, eventId } = await deliverOneEvent(event, {
      signatureScheme: 'standard-webhooks',
      rotate: { overlapSeconds: 3600 },
    });
    expect(verify(request.body, request.headers, secret).id).toBe(eventId);
    expect(verify(request.body, request.headers, previousSecret!).id).toBe(eventId);
  });
});
