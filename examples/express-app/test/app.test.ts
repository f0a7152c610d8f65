import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { adminToken, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, TestReceiver } from '@keyhook/testing/support';
import { verify } from '@keyhook/webhook-verify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createExpressApp, type ExpressApp } from '../src/app.js';

/** The embedding, over real HTTP: keyhook's router, the app's guarded route, the app's event. */
describe('an existing Express app with keyhook embedded', () => {
  let dir: string;
  let embedded: ExpressApp;
  let base: string;
  let receiver: TestReceiver;
  let admin: string;
  let server: ReturnType<ExpressApp['app']['listen']>;

  const call = async (method: string, url: string, token: string, body?: unknown) => {
    const response = await fetch(`${base}${url}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: tests assert response bodies by shape
    return { status: response.status, body: (await response.json()) as any };
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'keyhook-express-app-'));
    embedded = createExpressApp({
      filename: path.join(dir, 'app.db'),
      adminSession: { secret: TEST_ADMIN_SECRET },
      encryptionKey: TEST_ENCRYPTION_KEY,
      mode: 'development',
    });
    server = embedded.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    receiver = await TestReceiver.start();
    admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    await embedded.close();
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the guard runs before the app’s body parser: no key and a malformed body is 401, the body unparsed', async () => {
    const response = await fetch(`${base}/api/v1/reports`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{',
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('missing_credentials');
    expect(response.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it("keyhook's admin router works inside the app, and the app's route takes only a key with its scope", async () => {
    const reader = await call('POST', '/api/v1/admin/keys', admin, {
      name: 'reader',
      scopes: ['reports:read'],
    });
    expect(reader.status).toBe(201);
    const refused = await call('POST', '/api/v1/reports', reader.body.secret, { title: 'Q3' });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      code: 'insufficient_scope',
      details: [{ scope: 'reports:write' }],
    });
    expect((await call('POST', '/api/v1/reports', 'sk_live_nope', { title: 'Q3' })).status).toBe(401);
    expect((await call('GET', '/api/v1/reports', reader.body.secret)).body).toEqual({ data: [] });
  });

  it("the app's own handler publishes report.created with its write: delivered, signed, verified", async () => {
    const webhook = await call('POST', '/api/v1/admin/webhooks', admin, {
      url: receiver.url('/hook'),
      events: ['report.created'],
    });
    expect(webhook.status).toBe(201);
    const writer = await call('POST', '/api/v1/admin/keys', admin, {
      name: 'writer',
      scopes: ['reports:write'],
    });
    const created = await call('POST', '/api/v1/reports', writer.body.secret, { title: 'Quarterly report' });
    expect(created.status).toBe(201);
    await receiver.waitFor((requests) => requests.length === 1);
    const [request] = receiver.requests;
    const event = verify(request!.body, request!.headers['keyhook-signature'] as string, webhook.body.secret);
    expect(event).toMatchObject({
      id: `evt_${created.body.report.id}`,
      type: 'report.created',
      data: { reportId: created.body.report.id, title: 'Quarterly report' },
    });
    // A refused write publishes nothing.
    const refused = await call('POST', '/api/v1/reports', writer.body.secret, { title: ' ' });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'validation_failed', details: [{ path: 'title' }] });
    // The store is the signal: what the worker could send is a delivery there, and a publish in
    // the refused request (its handler writes before it answers) would be listed by now.
    const deliveries = await call(
      'GET',
      `/api/v1/admin/webhooks/${webhook.body.webhook.id}/deliveries`,
      admin,
    );
    expect(deliveries.body.data.map((d: { eventId: string }) => d.eventId)).toEqual([event.id]);
    expect(receiver.requests).toHaveLength(1);
  });
});
