import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, TestReceiver } from '@keyhook/testing/support';
import Stripe from 'stripe';
import { afterEach, describe, expect, it } from 'vitest';

// Stripe's own verifier, offline: constructEvent needs no API key or network.
const stripe = new Stripe('sk_test_offline');

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of opened.splice(0)) await item.close();
});

async function deliverOne(headers?: { signature: string; eventId: string }) {
  const receiver = await TestReceiver.start();
  opened.push(receiver);
  const keyhook = createKeyhook({
    store: new MemoryStore(),
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    mode: 'development',
    ...(headers && { delivery: { headers } }),
  });
  opened.push(keyhook);
  keyhook.createWorker({ pollIntervalMs: 20 }).start();
  const { secret } = await keyhook.webhooks.create('tenant_a', {
    url: receiver.url('/stripe'),
    events: ['run.completed'],
  });
  const published = await keyhook.events.publish({
    tenantId: 'tenant_a',
    type: 'run.completed',
    data: { runId: 'run_1', note: 'ünïcödé ✓' },
  });
  await receiver.waitFor((requests) => requests.length === 1);
  return { request: receiver.requests[0]!, secret, eventId: published.event.id };
}

describe("Stripe's constructEvent accepts keyhook deliveries", () => {
  it('with the default x-chatbot-signature header', async () => {
    const { request, secret, eventId } = await deliverOne();
    const header = String(request.headers['x-chatbot-signature']);
    const event = stripe.webhooks.constructEvent(request.body, header, secret);
    expect(event.id).toBe(eventId);
    expect(event.type as string).toBe('run.completed');
    expect(() => stripe.webhooks.constructEvent(`${request.body} `, header, secret)).toThrow(
      /No signatures found matching/,
    );
  });

  it('with header names of the host’s own: the value is the same scheme', async () => {
    const { request, secret, eventId } = await deliverOne({
      signature: 'x-acme-signature',
      eventId: 'x-acme-event-id',
    });
    expect(request.headers['x-acme-event-id']).toBe(eventId);
    const event = stripe.webhooks.constructEvent(
      request.body,
      String(request.headers['x-acme-signature']),
      secret,
    );
    expect(event.id).toBe(eventId);
  });
});
