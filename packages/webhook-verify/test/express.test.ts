import type { AddressInfo } from 'node:net';
import { isWebhookVerificationError, signEvent, verify, type WebhookEvent } from '@keyhook/webhook-verify';
import express, { type NextFunction, type Request, type Response } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventBody, nowSeconds, SECRET, signatureHeader } from './wire-format.js';

const secret = SECRET;
const received: WebhookEvent[] = [];
const handleEvent = (event: WebhookEvent) => received.push(event);
const errors: Error[] = [];
const app = express();

// recipe:express
// keyhook's event bodies reach 256 KiB: raise express.raw's 100 kB default.
app.post('/webhooks/keyhook', express.raw({ type: 'application/json', limit: '1mb' }), (req, res) => {
  try {
    const event = verify(req.body, req.headers, secret);
    res.sendStatus(204); // answer at once; dedupe on event.id and do the work afterwards
    handleEvent(event);
  } catch (error) {
    if (!isWebhookVerificationError(error)) throw error;
    res.status(400).json({ error: error.code });
  }
});
// recipe:end

// The bug this package exists to prevent: verifying JSON.stringify of the parsed body.
app.post('/reserialised', express.json(), (req, res) => {
  try {
    res.json(verify(JSON.stringify(req.body), req.headers['keyhook-signature'], secret));
  } catch (error) {
    if (!isWebhookVerificationError(error)) throw error;
    res.status(400).json({ error: error.code });
  }
});
// Passing the parsed object itself is a TypeError, which Express turns into a 500.
app.post('/parsed', express.json(), (req, res) => {
  res.json(verify(req.body, req.headers['keyhook-signature'], secret));
});
app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
  errors.push(error);
  res.status(500).end();
});

let server: ReturnType<typeof app.listen>;
let base = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => {
    server = app.listen(0, '127.0.0.1', () => resolve());
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

// Bytes JSON.stringify would not reproduce, as stored by a JSONB column: spaces, an escape.
const body =
  '{"id": "evt_express_1", "type": "invoice.paid", "createdAt": "2026-01-01T00:00:00.000Z", ' +
  '"data": {"title": "caf\\u00e9", "amountCents": 42}}';

const idOf = (payload: string) => /"id": ?"([^"]+)"/.exec(payload)?.[1] ?? '';
const post = (path: string, payload: string, headers: Record<string, string>) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'keyhook-event-id': idOf(payload), ...headers },
    body: payload,
  });

describe('Express recipe: express.raw on the webhook route, verify on the bytes', () => {
  it('accepts a real signed POST and hands over the event', async () => {
    received.length = 0;
    const reply = await post('/webhooks/keyhook', body, { 'keyhook-signature': signatureHeader(body) });
    expect(reply.status).toBe(204);
    expect(received).toEqual([JSON.parse(body)]);
    expect(received[0]?.data).toEqual({ title: 'café', amountCents: 42 });
  });

  it('accepts a signature during a sender rotation (several v1)', async () => {
    const other = signatureHeader(body, `whsec_${'0'.repeat(64)}`).split(',')[1];
    const reply = await post('/webhooks/keyhook', body, {
      'keyhook-signature': `${signatureHeader(body)},${other}`,
    });
    expect(reply.status).toBe(204);
  });

  it('answers 400 with the code for a tampered body, no header, or a stale timestamp', async () => {
    const tampered = await post('/webhooks/keyhook', body.replace('42', '43'), {
      'keyhook-signature': signatureHeader(body),
    });
    expect([tampered.status, await tampered.json()]).toEqual([400, { error: 'signature_mismatch' }]);
    const unsigned = await post('/webhooks/keyhook', body, {});
    expect([unsigned.status, await unsigned.json()]).toEqual([400, { error: 'missing_signature' }]);
    const stale = await post('/webhooks/keyhook', body, {
      'keyhook-signature': signatureHeader(body, SECRET, nowSeconds() - 301),
    });
    expect([stale.status, await stale.json()]).toEqual([400, { error: 'timestamp_out_of_tolerance' }]);
    const otherId = await post('/webhooks/keyhook', body, {
      'keyhook-signature': signatureHeader(body),
      'keyhook-event-id': 'evt_not_the_signed_one',
    });
    expect([otherId.status, await otherId.json()]).toEqual([400, { error: 'event_id_mismatch' }]);
  });

  it('fails a genuine delivery when the body is re-serialised', async () => {
    const reply = await post('/reserialised', body, { 'keyhook-signature': signatureHeader(body) });
    expect([reply.status, await reply.json()]).toEqual([400, { error: 'signature_mismatch' }]);
  });

  it('turns a parsed body into a TypeError (a 500), not a 400', async () => {
    errors.length = 0;
    const reply = await post('/parsed', body, { 'keyhook-signature': signatureHeader(body) });
    expect(reply.status).toBe(500);
    expect(errors[0]).toBeInstanceOf(TypeError);
    expect(errors[0]?.message).toContain("express.raw({ type: 'application/json' })");
  });

  it("accepts the largest event keyhook sends (a 256 KiB body), past express.raw's 100 kB default", async () => {
    const sent = eventBody({ filler: 'x'.repeat(256 * 1024 - 200) }, 'evt_express_big');
    expect(sent.length).toBeGreaterThan(200 * 1024);
    expect(sent.length).toBeLessThanOrEqual(256 * 1024);
    const reply = await post('/webhooks/keyhook', sent, { 'keyhook-signature': signatureHeader(sent) });
    expect(reply.status).toBe(204);
  });

  it('accepts bodies byte for byte, unicode and all, on a body keyhook itself would send', async () => {
    const sent = eventBody({ title: 'Café ☕ 日本語 😀' }, 'evt_express_2');
    received.length = 0;
    const reply = await post('/webhooks/keyhook', sent, { 'keyhook-signature': signatureHeader(sent) });
    expect(reply.status).toBe(204);
    expect(received[0]?.data).toEqual({ title: 'Café ☕ 日本語 😀' });
  });
});

// A receiver's own test with signEvent: no sender needed.
// recipe:test
it('answers 204 to a signed delivery and 400 to one signed with another secret', async () => {
  const delivery = signEvent({ type: 'invoice.paid', data: { invoiceId: 'inv_1' } }, secret);
  const accepted = await fetch(`${base}/webhooks/keyhook`, {
    method: 'POST',
    headers: delivery.headers,
    body: delivery.body,
  });
  expect(accepted.status).toBe(204);

  const forged = signEvent({ type: 'invoice.paid', data: { invoiceId: 'inv_1' } }, `whsec_${'0'.repeat(64)}`);
  const refused = await fetch(`${base}/webhooks/keyhook`, {
    method: 'POST',
    headers: forged.headers,
    body: forged.body,
  });
  expect(await refused.json()).toEqual({ error: 'signature_mismatch' });
});
// recipe:end
