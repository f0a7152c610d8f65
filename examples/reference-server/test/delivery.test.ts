import { createHmac } from 'node:crypto';
import { postgresAvailable } from '@keyhook/testing/postgres';
import { adminToken, answer, TestReceiver } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCompletedData } from './event-data.js';
import { backendsFor, type Running, start } from './instances.js';

const withPostgres = await postgresAvailable();

/** The server's own environment variables set the schedule and the timeout (data-plane.md §7.1). */
const DELIVERY_ENV = { KEYHOOK_RETRY_SCHEDULE: '60ms,120ms', KEYHOOK_DELIVERY_TIMEOUT: '1s' };

const backends = backendsFor('ref_dlv', withPostgres);

describe.each(backends)('webhook delivery end to end on $name', (backend) => {
  let running: Running;
  let receiver: TestReceiver;
  let tearDown: () => Promise<void>;
  let admin: string;

  const createWebhook = async (path: string) => {
    const reply = await running.client.request('POST', '/api/v1/admin/webhooks', admin, {
      url: receiver.url(path),
      events: ['run.completed'],
    });
    expect(reply.status).toBe(201);
    return reply.body as { webhook: { id: string }; secret: string };
  };
  const publish = (data: Record<string, unknown>) =>
    running.server.keyhook.events.publish({
      tenantId: 'acme',
      type: 'run.completed',
      data: runCompletedData(data),
    });

  beforeAll(async () => {
    if (!backend.available) return;
    receiver = await TestReceiver.start();
    const setUp = await backend.setUp();
    tearDown = setUp.tearDown;
    running = await start({ ...setUp.env, ...DELIVERY_ENV });
    admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
  });

  afterAll(async () => {
    if (!backend.available) return;
    await running.server.close();
    await receiver.close();
    await tearDown();
  });

  it.skipIf(!backend.available)(
    'a published event reaches the receiver signed, and the admin view shows it succeeded',
    async () => {
      const { webhook, secret } = await createWebhook('/ok');
      const published = await publish({ runId: 'run_1' });
      await receiver.waitFor((requests) => requests.some((r) => r.path === '/ok'));
      const [request] = receiver.to('/ok');
      expect(request!.body).toBe(published.event.payload);
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(request!.headers['x-chatbot-signature']))!;
      expect(v1).toBe(createHmac('sha256', secret).update(`${t}.${request!.body}`).digest('hex'));
      const deliveryId = published.deliveries.find((d) => d.webhookId === webhook.id)!.id;
      await expect
        .poll(async () => {
          const reply = await running.client.request(
            'GET',
            `/api/v1/admin/webhooks/${webhook.id}/deliveries/${deliveryId}`,
            admin,
          );
          return reply.body.delivery?.status;
        })
        .toBe('succeeded');
    },
  );

  it.skipIf(!backend.available)(
    'KEYHOOK_RETRY_SCHEDULE drives the retries: 3 attempts, then failed; an admin retry sends one more',
    async () => {
      receiver.on('/down', answer(500, 'down'));
      const { webhook } = await createWebhook('/down');
      const published = await publish({ runId: 'run_2' });
      const deliveryId = published.deliveries.find((d) => d.webhookId === webhook.id)!.id;
      const path = `/api/v1/admin/webhooks/${webhook.id}/deliveries`;
      await expect
        .poll(
          async () => (await running.client.request('GET', `${path}?status=failed`, admin)).body.data.length,
          {
            timeout: 5000,
          },
        )
        .toBe(1);
      const sent = receiver.to('/down');
      expect(sent).toHaveLength(3);
      expect(sent[1]!.receivedAt - sent[0]!.receivedAt).toBeGreaterThanOrEqual(50);
      expect(sent[2]!.receivedAt - sent[1]!.receivedAt).toBeGreaterThanOrEqual(105);
      const detail = await running.client.request('GET', `${path}/${deliveryId}`, admin);
      expect(detail.status, JSON.stringify(detail.body)).toBe(200);
      expect(detail.body.attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 500, 500]);
      expect(detail.body.event).toEqual(JSON.parse(published.event.payload));

      receiver.on('/down', answer(200));
      const retried = await running.client.request('POST', `${path}/${deliveryId}/retry`, admin);
      expect(retried.status).toBe(202);
      await receiver.waitFor((requests) => requests.filter((r) => r.path === '/down').length === 4);
      await expect
        .poll(
          async () =>
            (await running.client.request('GET', `${path}/${deliveryId}`, admin)).body.delivery.status,
        )
        .toBe('succeeded');
      // The store is the signal: the endpoint's one delivery is final, with the four attempts the
      // receiver got, so the worker has nothing left to send it.
      const all = await running.client.request('GET', path, admin);
      expect(all.body.data.map((d: { id: string; status: string }) => [d.id, d.status])).toEqual([
        [deliveryId, 'succeeded'],
      ]);
      const attempts = (await running.client.request('GET', `${path}/${deliveryId}`, admin)).body.attempts;
      expect(attempts.map((a: { statusCode: number }) => a.statusCode)).toEqual([500, 500, 500, 200]);
      expect(receiver.to('/down')).toHaveLength(4);
    },
  );
});
