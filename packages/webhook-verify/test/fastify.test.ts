import { isWebhookVerificationError, verify, type WebhookEvent } from '@keyhook/webhook-verify';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventBody, nowSeconds, SECRET, signatureHeader } from './wire-format.js';

const secret = SECRET;
const received: WebhookEvent[] = [];
const handleEvent = (event: WebhookEvent) => received.push(event);
const app = Fastify();

// recipe:fastify
app.register(async (webhooks) => {
  // Raw bytes inside this plugin only: the rest of the app keeps Fastify's JSON parser.
  webhooks.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    done(null, body);
  });
  webhooks.post<{ Body: Buffer }>('/webhooks/keyhook', async (request, reply) => {
    try {
      const event = verify(request.body, request.headers, secret);
      reply.code(204).send(); // answer at once; dedupe on event.id and do the work afterwards
      handleEvent(event);
    } catch (error) {
      if (!isWebhookVerificationError(error)) throw error;
      reply.code(400).send({ error: error.code });
    }
  });
});
// recipe:end

// Outside the plugin the default JSON parser runs, so this route shows the re-serialising bug.
app.post('/reserialised', async (request, reply) => {
  try {
    return verify(JSON.stringify(request.body), request.headers['keyhook-signature'], secret);
  } catch (error) {
    if (!isWebhookVerificationError(error)) throw error;
    return reply.code(400).send({ error: error.code });
  }
});
app.post('/elsewhere', async (request) => ({ bodyIs: typeof request.body }));

let base = '';
beforeAll(async () => {
  base = await app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await app.close();
});

const body =
  '{"id": "evt_fastify_1", "type": "invoice.voided", "createdAt": "2026-01-01T00:00:00.000Z", ' +
  '"data": {"reason": "na\\u00efve", "amount": 1.50}}';

const idOf = (payload: string) => /"id": ?"([^"]+)"/.exec(payload)?.[1] ?? '';
const post = (path: string, payload: string, headers: Record<string, string>, type = 'application/json') =>
  fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': type, 'keyhook-event-id': idOf(payload), ...headers },
    body: payload,
  });

describe('Fastify recipe: a parseAs buffer parser in an encapsulated plugin', () => {
  it('accepts a real signed POST and hands over the event', async () => {
    received.length = 0;
    const reply = await post('/webhooks/keyhook', body, { 'keyhook-signature': signatureHeader(body) });
    expect(reply.status).toBe(204);
    expect(received).toEqual([JSON.parse(body)]);
  });

  it('accepts application/json with a charset parameter', async () => {
    const sent = eventBody({ title: 'Café ☕' });
    const reply = await post(
      '/webhooks/keyhook',
      sent,
      { 'keyhook-signature': signatureHeader(sent) },
      'application/json; charset=utf-8',
    );
    expect(reply.status).toBe(204);
  });

  it('answers 400 with the code for a tampered body, a bad header, or a future timestamp', async () => {
    const tampered = await post('/webhooks/keyhook', `${body} `, {
      'keyhook-signature': signatureHeader(body),
    });
    expect([tampered.status, await tampered.json()]).toEqual([400, { error: 'signature_mismatch' }]);
    const malformed = await post('/webhooks/keyhook', body, { 'keyhook-signature': 't=Infinity,v1=00' });
    expect([malformed.status, await malformed.json()]).toEqual([400, { error: 'malformed_header' }]);
    const future = await post('/webhooks/keyhook', body, {
      'keyhook-signature': signatureHeader(body, SECRET, nowSeconds() + 301),
    });
    expect([future.status, await future.json()]).toEqual([400, { error: 'timestamp_out_of_tolerance' }]);
  });

  it('fails a genuine delivery when the body is re-serialised', async () => {
    const reply = await post('/reserialised', body, { 'keyhook-signature': signatureHeader(body) });
    expect([reply.status, await reply.json()]).toEqual([400, { error: 'signature_mismatch' }]);
  });

  it('leaves the rest of the app on the parsed JSON body', async () => {
    const reply = await post('/elsewhere', body, {});
    expect(await reply.json()).toEqual({ bodyIs: 'object' });
  });
});
