import { isWebhookVerificationError, verifyRequest, type WebhookEvent } from '@keyhook/webhook-verify/web';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { eventBody, nowSeconds, SECRET, signatureHeader } from './wire-format.js';

const received: WebhookEvent[] = [];
const handleEvent = async (event: WebhookEvent) => {
  received.push(event);
};

// recipe:hono
const app = new Hono<{ Bindings: { KEYHOOK_WEBHOOK_SECRET: string } }>();

app.post('/webhooks/keyhook', async (c) => {
  try {
    // c.req.raw is the untouched Request: verifyRequest reads its bytes.
    const event = await verifyRequest(c.req.raw, c.env.KEYHOOK_WEBHOOK_SECRET);
    await handleEvent(event); // keep it quick: dedupe on event.id, queue the real work
    return c.body(null, 204);
  } catch (error) {
    if (!isWebhookVerificationError(error)) throw error;
    return c.json({ error: error.code }, 400);
  }
});
// recipe:end

// Hono's own test entry: a real Request through app.fetch, with the Worker's bindings as env.
const post = (body: string, headers: Record<string, string>) =>
  app.request(
    '/webhooks/keyhook',
    { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body },
    { KEYHOOK_WEBHOOK_SECRET: SECRET },
  );

describe('Hono recipe: verifyRequest on c.req.raw', () => {
  const body = eventBody({ title: 'Café ☕' }, 'evt_hono_1');

  it('accepts a signed delivery and hands over the event', async () => {
    received.length = 0;
    const reply = await post(body, {
      'keyhook-signature': signatureHeader(body),
      'keyhook-event-id': 'evt_hono_1',
    });
    expect(reply.status).toBe(204);
    expect(received).toEqual([JSON.parse(body)]);
  });

  it('answers 400 with the code for a tampered body, a stale one, and another event id', async () => {
    const tampered = await post(`${body} `, { 'keyhook-signature': signatureHeader(body) });
    expect([tampered.status, await tampered.json()]).toEqual([400, { error: 'signature_mismatch' }]);
    const stale = await post(body, {
      'keyhook-signature': signatureHeader(body, SECRET, nowSeconds() - 301),
    });
    expect([stale.status, await stale.json()]).toEqual([400, { error: 'timestamp_out_of_tolerance' }]);
    const otherId = await post(body, {
      'keyhook-signature': signatureHeader(body),
      'keyhook-event-id': 'evt_x',
    });
    expect([otherId.status, await otherId.json()]).toEqual([400, { error: 'event_id_mismatch' }]);
  });
});
