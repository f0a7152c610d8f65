import type { DeliveryView, Keyhook, KeyhookOptions, WebhookView } from '@keyhook/core';
import { answer, TestReceiver, type VirtualClock } from '@keyhook/testing/support';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startedKeyhook } from './worker-harness.js';

const TENANT = 'tenant_a';

interface Logged {
  level: string;
  context: Record<string, unknown>;
  message: string;
}

/**
 * Endpoint health callbacks: called after the change is committed, on the instance whose
 * worker made it; one that throws is logged, one that never returns holds nothing of delivery.
 */
describe('endpoint health callbacks', () => {
  let receiver: TestReceiver;
  let keyhook: Keyhook;
  let clock: VirtualClock;
  let logs: Logged[];

  beforeEach(async () => {
    receiver = await TestReceiver.start();
    // With no retries, a 500 fails a delivery for good at its first attempt; a 410 disables at once.
    receiver.on('/fail', answer(500));
    receiver.on('/gone', answer(410));
    logs = [];
  });

  afterEach(async () => {
    await keyhook?.close();
    await receiver.close();
  });

  const start = (delivery: NonNullable<KeyhookOptions['delivery']>) => {
    const record = (level: string) => (context: object, message: string) =>
      logs.push({ level, context: context as Record<string, unknown>, message });
    // No retries: a failure is for good at its first attempt, which goes out at publish: nothing
    // here waits for a retry or a poll.
    const started = startedKeyhook({
      logger: { info: record('info'), warn: record('warn'), error: record('error') },
      delivery: { timeoutMs: 500, retrySchedule: [], ...delivery },
    });
    ({ keyhook, clock } = started);
    return started.worker;
  };
  /** Each a millisecond after the last on the clock, so their (time-sortable) ids list in order. */
  const publish = async (n: number) => {
    await clock.advance(1);
    return keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: { n } });
  };

  it('reports each delivery failed for good, then the endpoint the fifth disabled, with the committed state', async () => {
    const failed: DeliveryView[] = [];
    const disabled: [WebhookView, string][] = [];
    start({
      // Returns a number, as a JavaScript host's callback may: nothing to watch, nothing logged.
      onDeliveryFailed: (delivery) => failed.push(delivery) as never,
      onEndpointDisabled: (webhook, reason) => {
        disabled.push([webhook, reason]);
      },
    });
    const { webhook } = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/fail'),
      events: ['run.completed'],
    });
    for (let n = 0; n < 5; n++) {
      await publish(n);
      await receiver.waitFor((requests) => requests.length === n + 1);
    }
    // Polled until the store has recorded the fifth answer (real I/O, not a timer).
    await expect.poll(() => disabled.length).toBe(1);
    expect(failed.map((delivery) => [delivery.status, delivery.attemptCount])).toEqual(
      Array(5).fill(['failed', 1]),
    );
    expect(disabled[0]![1]).toBe('failures');
    expect(disabled[0]![0]).toMatchObject({ id: webhook.id, status: 'disabled', disabledReason: 'failures' });
    // Committed before the call: the store already says so.
    expect((await keyhook.webhooks.get(TENANT, webhook.id)).status).toBe('disabled');
    expect(logs.filter((line) => line.message.endsWith('threw'))).toEqual([]);
  });

  it('reports an endpoint a 410 Gone disabled at once, with the reason gone', async () => {
    const failed: DeliveryView[] = [];
    const disabled: [WebhookView, string][] = [];
    start({
      onDeliveryFailed: (delivery) => void failed.push(delivery),
      onEndpointDisabled: (webhook, reason) => void disabled.push([webhook, reason]),
    });
    const { webhook } = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/gone'),
      events: ['run.completed'],
    });
    await publish(0);
    await expect.poll(() => disabled.length).toBe(1);
    expect(disabled[0]![1]).toBe('gone');
    expect(disabled[0]![0]).toMatchObject({ id: webhook.id, status: 'disabled', disabledReason: 'gone' });
    expect(failed.map((delivery) => [delivery.status, delivery.attemptCount])).toEqual([['failed', 1]]);
  });

  it('a callback that throws and one that never returns leave delivery, and stop(), unaffected', async () => {
    let calls = 0;
    const worker = start({
      // Never settles: a host waiting on something that never comes.
      onDeliveryFailed: () => {
        calls++;
        return new Promise<void>(() => {});
      },
      onEndpointDisabled: () => {
        throw new Error('the pager is down');
      },
    });
    receiver.on('/ok', answer(200));
    const gone = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/fail'),
      events: ['run.completed'],
    });
    for (let n = 0; n < 5; n++) {
      await publish(n);
      await receiver.waitFor((requests) => requests.length === n + 1);
    }
    // Polled until the fifth answer is recorded (real I/O).
    await expect
      .poll(() => logs.some((line) => line.message === 'keyhook: onEndpointDisabled threw'))
      .toBe(true);
    expect(calls).toBe(5);
    const thrown = logs.find((line) => line.message === 'keyhook: onEndpointDisabled threw')!;
    expect(thrown).toMatchObject({
      level: 'error',
      context: { webhookId: gone.webhook.id, err: 'the pager is down' },
    });
    // Delivery goes on: a new endpoint gets its event, and the failed ones are all recorded.
    await keyhook.webhooks.create(TENANT, { url: receiver.url('/ok'), events: ['run.completed'] });
    await publish(5);
    await receiver.waitFor((requests) => requests.some((request) => request.path === '/ok'));
    const page = await keyhook.deliveries.list(TENANT, gone.webhook.id, 10, undefined, null);
    // Newest first: the last event is held for the disabled endpoint.
    expect(page.map((delivery) => delivery.status)).toEqual(['held', ...Array(5).fill('failed')]);
    // stop() waits for attempts and records, not for the host's callbacks.
    await worker.stop();
  });
});
