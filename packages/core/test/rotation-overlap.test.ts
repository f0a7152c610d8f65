import { createHmac } from 'node:crypto';
import { isKeyhookError, type Keyhook } from '@keyhook/core';
import { adminToken, TestReceiver, VirtualClock } from '@keyhook/testing/support';
import Stripe from 'stripe';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signatureHeader } from '../src/delivery/signature.js';
import { startedKeyhook } from './worker-harness.js';

// Stripe's own verifier, offline: constructEvent needs no API key or network.
const stripe = new Stripe('sk_test_offline');
const hmac = (secret: string, t: string, body: string) =>
  createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');

describe('signature header with several secrets', () => {
  it('carries one v1 per secret, in the order given', () => {
    const header = signatureHeader(['whsec_new', 'whsec_old'], '{}', 1_767_225_600);
    expect(header).toBe(
      `t=1767225600,v1=${hmac('whsec_new', '1767225600', '{}')},v1=${hmac('whsec_old', '1767225600', '{}')}`,
    );
    expect(signatureHeader(['whsec_new'], '{}', 1_767_225_600)).toBe(
      signatureHeader('whsec_new', '{}', 1_767_225_600),
    );
  });
});

describe('webhook secret rotation with an overlap window', () => {
  let receiver: TestReceiver;
  let keyhook: Keyhook;
  let clock: VirtualClock;

  beforeEach(async () => {
    receiver = await TestReceiver.start();
    // Near the real time: Stripe's constructEvent judges `t` against it.
    ({ keyhook, clock } = startedKeyhook({ clock: new VirtualClock(new Date()) }));
  });

  afterEach(async () => {
    await keyhook.close();
    await receiver.close();
  });

  /** Publishes one event and returns the delivery as the receiver got it. */
  const deliver = async () => {
    const seen = receiver.requests.length;
    await keyhook.events.publish({ tenantId: 'tenant_a', type: 'run.completed', data: { runId: 'run_1' } });
    await receiver.waitFor((requests) => requests.length === seen + 1);
    const request = receiver.requests[seen]!;
    return { body: request.body, header: String(request.headers[keyhook.headerNames.signature]) };
  };
  const verifies = (delivery: { body: string; header: string }, secret: string) => {
    try {
      stripe.webhooks.constructEvent(delivery.body, delivery.header, secret);
      return true;
    } catch {
      return false;
    }
  };
  const v1s = (header: string) => header.split(',').filter((part) => part.startsWith('v1=')).length;

  it('inside the overlap both secrets verify, the new one first; at its end only the new one', async () => {
    const { webhook, secret: first } = await keyhook.webhooks.create('tenant_a', {
      url: receiver.url('/hooks'),
      events: ['run.completed'],
    });
    const rotated = await keyhook.webhooks.rotate('tenant_a', webhook.id, { overlapSeconds: 10 });
    expect(rotated.webhook.previousSecretExpiresAt?.getTime()).toBe(clock.now().getTime() + 10_000);

    const inside = await deliver();
    expect(v1s(inside.header)).toBe(2);
    const t = inside.header.split(',')[0]!.slice(2);
    expect(inside.header.split(',')[1]).toBe(`v1=${hmac(rotated.secret!, t, inside.body)}`);
    expect(verifies(inside, first)).toBe(true);
    expect(verifies(inside, rotated.secret!)).toBe(true);

    // The window ends by time alone: no job runs, the next attempt simply signs with one secret.
    await clock.advance(10_000);
    const after = await deliver();
    expect(v1s(after.header)).toBe(1);
    expect(verifies(after, first)).toBe(false);
    expect(verifies(after, rotated.secret!)).toBe(true);
  });

  it('a plain rotation ends the old secret at once, and ends an overlap still running', async () => {
    const { webhook, secret: first } = await keyhook.webhooks.create('tenant_a', {
      url: receiver.url('/hooks'),
      events: ['run.completed'],
    });
    const overlapping = await keyhook.webhooks.rotate('tenant_a', webhook.id, { overlapSeconds: 600 });
    const plain = await keyhook.webhooks.rotate('tenant_a', webhook.id);
    expect(plain.webhook.previousSecretExpiresAt).toBeNull();
    const delivery = await deliver();
    expect(v1s(delivery.header)).toBe(1);
    expect(verifies(delivery, plain.secret!)).toBe(true);
    expect(verifies(delivery, overlapping.secret!)).toBe(false);
    expect(verifies(delivery, first)).toBe(false);
  });

  it('a second rotation inside the window keeps only the secret it replaces', async () => {
    const { webhook, secret: first } = await keyhook.webhooks.create('tenant_a', {
      url: receiver.url('/hooks'),
      events: ['run.completed'],
    });
    const second = await keyhook.webhooks.rotate('tenant_a', webhook.id, { overlapSeconds: 600 });
    await clock.advance(1_000);
    const third = await keyhook.webhooks.rotate('tenant_a', webhook.id, { overlapSeconds: 60 });
    expect(third.webhook.previousSecretExpiresAt?.getTime()).toBe(clock.now().getTime() + 60_000);
    const delivery = await deliver();
    expect(v1s(delivery.header)).toBe(2);
    expect(verifies(delivery, third.secret!)).toBe(true);
    expect(verifies(delivery, second.secret!)).toBe(true);
    expect(verifies(delivery, first)).toBe(false);
  });

  it('refuses a bad overlap with validation_failed, over HTTP and in code, and answers 404 for another tenant', async () => {
    const { webhook } = await keyhook.webhooks.create('tenant_a', {
      url: receiver.url('/hooks'),
      events: ['run.completed'],
    });
    const token = await adminToken({ tenantId: 'tenant_a', now: clock.now() });
    const rotate = (body: string | null, tenantToken = token) =>
      keyhook.handle({
        method: 'POST',
        path: `/admin/webhooks/${webhook.id}/rotate`,
        headers: { authorization: `Bearer ${tenantToken}`, 'content-type': 'application/json' },
        rawBody: body === null ? null : Buffer.from(body),
      });
    for (const body of [
      '{"overlapSeconds":-1}',
      '{"overlapSeconds":1.5}',
      '{"overlapSeconds":"60"}',
      '{"overlapSeconds":604801}',
      '{"overlap":60}',
      '[]',
      'null',
    ]) {
      const reply = await rotate(body);
      expect(reply.status, body).toBe(400);
      expect(JSON.parse(reply.body!).error.code).toBe('validation_failed');
    }
    expect((await rotate('{')).status).toBe(400);
    const none = await rotate(null);
    expect(none.status).toBe(200);
    expect(JSON.parse(none.body!).webhook.previousSecretExpiresAt).toBeNull();
    const week = await rotate('{"overlapSeconds":604800}');
    expect(week.status).toBe(200);
    expect(JSON.parse(week.body!).webhook.previousSecretExpiresAt).toBe(
      new Date(clock.now().getTime() + 604_800_000).toISOString(),
    );
    const foreign = await rotate(
      '{"overlapSeconds":60}',
      await adminToken({ tenantId: 'tenant_b', now: clock.now() }),
    );
    expect(foreign.status).toBe(404);
    const error = await keyhook.webhooks
      .rotate('tenant_a', webhook.id, { overlapSeconds: -5 })
      .catch((caught: unknown) => caught);
    expect(isKeyhookError(error) && error.code).toBe('validation_failed');
  });
});
