import type { AddressInfo } from 'node:net';
import { isWebhookVerificationError, verify, type WebhookEvent } from '@keyhook/webhook-verify';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventBody, nowSeconds, SECRET, signatureHeader } from './wire-format.js';

const secret = SECRET;
const received: WebhookEvent[] = [];
const handleEvent = (event: WebhookEvent) => received.push(event);
const app = new Koa();

// recipe:koa
// Before any body parser (koa-bodyparser would consume the stream): the raw bytes, capped.
app.use(async (ctx, next) => {
  if (ctx.method !== 'POST' || ctx.path !== '/webhooks/keyhook') return next();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > 1024 * 1024) ctx.throw(413, 'payload too large');
    chunks.push(chunk as Buffer);
  }
  try {
    const event = verify(Buffer.concat(chunks), ctx.headers, secret);
    ctx.status = 204; // answer at once; dedupe on event.id and do the work afterwards
    handleEvent(event);
  } catch (error) {
    if (!isWebhookVerificationError(error)) throw error;
    ctx.status = 400;
    ctx.body = { error: error.code };
  }
});
// recipe:end

let server: ReturnType<typeof app.listen>;
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => {
    server = app.listen(0, '127.0.0.1', () => resolve());
  });
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/keyhook`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const post = (body: string | Uint8Array, headers: Record<string, string>) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

describe('Koa recipe: raw bytes from ctx.req, verify with ctx.headers', () => {
  const body = eventBody({ title: 'Café ☕ 日本語' }, 'evt_koa_1');

  it('accepts a real signed POST and hands over the event', async () => {
    received.length = 0;
    const reply = await post(body, {
      'keyhook-signature': signatureHeader(body),
      'keyhook-event-id': 'evt_koa_1',
    });
    expect(reply.status).toBe(204);
    expect(received).toEqual([JSON.parse(body)]);
  });

  it('answers 400 for a tampered or stale delivery, and 413 past the cap', async () => {
    const tampered = await post(`${body} `, { 'keyhook-signature': signatureHeader(body) });
    expect([tampered.status, await tampered.json()]).toEqual([400, { error: 'signature_mismatch' }]);
    const stale = await post(body, {
      'keyhook-signature': signatureHeader(body, SECRET, nowSeconds() - 301),
    });
    expect([stale.status, await stale.json()]).toEqual([400, { error: 'timestamp_out_of_tolerance' }]);
    const huge = await post(new Uint8Array(1024 * 1024 + 1), {
      'keyhook-signature': signatureHeader(body),
    });
    expect(huge.status).toBe(413);
  });
});
