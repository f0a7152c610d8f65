import {
  signatureHeader as coreSignatureHeader,
  createKeyhook,
  MemoryStore,
  mintWebhookSecret,
  silentLogger,
} from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, TestReceiver } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { verify } from '../src/index.js';
import { verifyAsync } from '../src/web.js';
import { eventBody, hmacHex, nowSeconds } from './sign.js';

describe('interop with the sender in @keyhook/core', () => {
  it('a header signed by core verifies here, sync and WebCrypto, and agrees with an independent HMAC', async () => {
    const secret = mintWebhookSecret((n) => crypto.getRandomValues(new Uint8Array(n)));
    const body = eventBody({ sourceId: 'src_1', note: 'ünïcödé ✓' });
    const t = nowSeconds();
    const header = coreSignatureHeader(secret, body, t);
    expect(header).toBe(`t=${t},v1=${hmacHex(secret, t, body)}`);
    expect(verify(body, header, secret).type).toBe('run.completed');
    expect((await verifyAsync(new TextEncoder().encode(body), header, secret)).data).toMatchObject({
      sourceId: 'src_1',
    });
    const other = mintWebhookSecret((n) => crypto.getRandomValues(new Uint8Array(n)));
    expect(() => verify(body, header, other)).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });
});

describe('interop with a real delivery', () => {
  it('a delivery sent by the worker to a receiver on 127.0.0.1 verifies here, and agrees with an independent HMAC', async () => {
    const receiver = await TestReceiver.start();
    const keyhook = createKeyhook({
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      mode: 'development',
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
    });
    const worker = keyhook.createWorker();
    worker.start();
    try {
      const { secret } = await keyhook.webhooks.create('tenant_a', {
        url: receiver.url('/hooks'),
        events: ['generation.published'],
      });
      const published = await keyhook.events.publish({
        tenantId: 'tenant_a',
        type: 'generation.published',
        data: { generation: 7, note: 'ünïcödé ✓' },
      });
      await receiver.waitFor((requests) => requests.length === 1);
      const [request] = receiver.requests;
      const header = String(request!.headers['x-chatbot-signature']);
      const t = Number(/^t=(\d+),/.exec(header)![1]);
      expect(header).toBe(`t=${t},v1=${hmacHex(secret, t, request!.body)}`);
      const event = verify(request!.body, header, secret);
      expect(event).toMatchObject({
        id: published.event.id,
        type: 'generation.published',
        data: { generation: 7 },
      });
      expect(request!.headers['x-chatbot-event-id']).toBe(event.id);
      const viaWeb = await verifyAsync(new TextEncoder().encode(request!.body), header, secret);
      expect(viaWeb.id).toBe(published.event.id);
      expect(() => verify(`${request!.body} `, header, secret)).toThrow(
        expect.objectContaining({ code: 'signature_mismatch' }),
      );
    } finally {
      await keyhook.close();
      await receiver.close();
    }
  });
});

describe('interop with a sender that names its own headers', () => {
  it('core delivers under delivery.headers, and verify reads the same names from the request’s headers', async () => {
    const receiver = await TestReceiver.start();
    const headers = { signature: 'x-acme-signature', eventId: 'x-acme-event-id' };
    const keyhook = createKeyhook({
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      mode: 'development',
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      events: { 'invoice.paid': {} },
      delivery: { headers },
    });
    keyhook.createWorker().start();
    try {
      const { secret } = await keyhook.webhooks.create('tenant_a', {
        url: receiver.url('/hooks'),
        events: ['invoice.paid'],
      });
      const published = await keyhook.events.publish({
        tenantId: 'tenant_a',
        type: 'invoice.paid',
        data: { invoiceId: 'inv_1' },
      });
      await receiver.waitFor((requests) => requests.length === 1);
      const request = receiver.requests[0]!;
      expect(request.headers['x-chatbot-signature']).toBeUndefined();
      const event = verify<{ 'invoice.paid': { invoiceId: string } }>(request.body, request.headers, secret, {
        headers,
      });
      expect(event).toMatchObject({ id: published.event.id, data: { invoiceId: 'inv_1' } });
      const viaWeb = await verifyAsync(
        request.body,
        new Headers(request.headers as Record<string, string>),
        secret,
        {
          headers,
        },
      );
      expect(viaWeb.id).toBe(published.event.id);
      // The same delivery read under the default names has no signature header.
      expect(() => verify(request.body, request.headers, secret)).toThrow(
        expect.objectContaining({ code: 'missing_signature' }),
      );
    } finally {
      await keyhook.close();
      await receiver.close();
    }
  });
});
