import { deliverOneEvent } from '@keyhook/testing/support';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';

// Stripe's own verifier, offline: constructEvent needs no API key or network.
const stripe = new Stripe('sk_test_offline');
const event = { type: 'run.completed', data: { runId: 'run_1', note: 'ünïcödé ✓' } };

describe("Stripe's constructEvent accepts keyhook deliveries", () => {
  it('with the default keyhook-signature header', async () => {
    const { request, secret, eventId } = await deliverOneEvent(event);
    const header = String(request.headers['keyhook-signature']);
    const received = stripe.webhooks.constructEvent(request.body, header, secret);
    expect(received.id).toBe(eventId);
    expect(received.type as string).toBe('run.completed');
    expect(() => stripe.webhooks.constructEvent(`${request.body} `, header, secret)).toThrow(
      /No signatures found matching/,
    );
  });

  it('with header names of the host’s own: the value is the same scheme', async () => {
    const headers = { signature: 'x-acme-signature', eventId: 'x-acme-event-id' };
    const { request, secret, eventId } = await deliverOneEvent(event, { headers });
    expect(request.headers['x-acme-event-id']).toBe(eventId);
    const received = stripe.webhooks.constructEvent(
      request.body,
      String(request.headers['x-acme-signature']),
      secret,
    );
    expect(received.id).toBe(eventId);
  });
});
