import { postgresAvailable } from '@keyhook/testing/postgres';
import { TestReceiver } from '@keyhook/testing/support';
import { verify } from '@keyhook/webhook-verify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildInvoicesApp, type InvoiceEvents } from '../src/app.js';
import {
  adminSessionFor,
  dropSchemas,
  type RunningApp,
  startInvoicesApp,
  testOptions,
  uniqueSchemas,
} from './harness.js';

const available = await postgresAvailable();

/** keyhook's state lives in PostgreSQL, sealed with the encryption key: a new process picks it up. */
describe.skipIf(!available)('restarting the invoices app on the same database', () => {
  const schemas = uniqueSchemas('invoices_restart');
  let receiver: TestReceiver;
  // Every instance started, so a failed assertion still closes them all.
  const started: RunningApp[] = [];
  const start = async () => {
    const running = await startInvoicesApp(testOptions(schemas));
    started.push(running);
    return running;
  };

  beforeAll(async () => {
    receiver = await TestReceiver.start();
  });
  afterAll(async () => {
    for (const running of started) await running.instance.close();
    await receiver.close();
    await dropSchemas(schemas);
  });

  it('a webhook made before the restart gets the next event, signed with its secret from before', async () => {
    const admin = await adminSessionFor('acme');
    const before = await start();
    const webhook = await before.call('POST', '/api/v1/admin/webhooks', admin, {
      url: receiver.url('/hook'),
      events: ['invoice.created'],
    });
    expect(webhook.status).toBe(201);
    const key = await before.call('POST', '/api/v1/admin/keys', admin, {
      name: 'w',
      scopes: ['invoices:write'],
    });
    await before.instance.close();

    const running = await start();
    const created = await running.call('POST', '/api/v1/invoices', key.body.secret, {
      customer: 'Initech',
      amountCents: 4200,
    });
    expect(created.status).toBe(201);
    await receiver.waitFor((requests) => requests.length === 1);
    const [request] = receiver.requests;
    const event = verify<InvoiceEvents>(
      request!.body,
      request!.headers['x-invoices-signature'],
      webhook.body.secret,
    );
    expect(event).toMatchObject({
      type: 'invoice.created',
      data: { invoiceId: created.body.invoice.id, customer: 'Initech', amountCents: 4200 },
    });
    expect(request!.headers['x-invoices-event-id']).toBe(event.id);
  });

  it('without encryptionKey the app does not start, and says how to make one', async () => {
    const { encryptionKey: _left, ...withoutKey } = testOptions(schemas);
    const attempt = buildInvoicesApp(withoutKey);
    await expect(attempt).rejects.toThrow(TypeError);
    await expect(attempt).rejects.toThrow(/encryptionKey is required.*generateEncryptionKey\(\)/);
  });
});
