import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import { requestJson } from '@keyhook/testing/support';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Invoice, invoiceEventId } from '../src/app.js';
import { createInvoiceReceiver, type InvoiceWebhookEvent } from '../src/invoice-receiver.js';
import {
  adminSessionFor,
  dropSchemas,
  type RunningApp,
  startInvoicesApp,
  testOptions,
  uniqueSchemas,
} from './harness.js';

const available = await postgresAvailable();

/** The whole embedding over real HTTP and a real PostgreSQL: keys, guards, webhooks, deliveries. */
describe.skipIf(!available)('the invoices app with keyhook embedded (PostgreSQL)', () => {
  const schemas = uniqueSchemas('invoices_e2e');
  let running: RunningApp;
  let receiver: Server;
  let receiverUrl: string;
  const received: InvoiceWebhookEvent[] = [];
  // The receiver reads its secret at every request: set once the webhook exists.
  const receiverConfig = {
    secret: 'whsec_not_yet',
    onEvent: (event: InvoiceWebhookEvent) => void received.push(event),
  };
  const receivedHeaders: IncomingHttpHeaders[] = [];
  const keys: { acme: string; read: string; write: string; globex: string } = {
    acme: '',
    read: '',
    write: '',
    globex: '',
  };
  let webhookId: string;
  let paid: { id: string; paidAt: string; customer: string; amountCents: number };

  beforeAll(async () => {
    running = await startInvoicesApp(testOptions(schemas));
    receiver = createInvoiceReceiver(receiverConfig);
    // Only records what arrived; the receiver's own listener answers.
    receiver.prependListener('request', (request) => receivedHeaders.push(request.headers));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/invoices-hook`;
    keys.acme = await adminSessionFor('acme');
  });
  afterAll(async () => {
    await running?.instance.close();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    await dropSchemas(schemas);
  });

  it("keys may carry only the app's scopes: sources:read is refused naming invoices:read", async () => {
    const refused = await running.call('POST', '/api/v1/admin/keys', keys.acme, {
      name: 'wrong scope',
      scopes: ['sources:read'],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('validation_failed');
    expect(refused.body.error.details[0].path).toBe('scopes.0');
    expect(refused.body.error.message).toContain('invoices:read');

    const reader = await running.call('POST', '/api/v1/admin/keys', keys.acme, {
      name: 'reader',
      scopes: ['invoices:read'],
    });
    const writer = await running.call('POST', '/api/v1/admin/keys', keys.acme, {
      name: 'writer',
      scopes: ['invoices:write'],
    });
    expect([reader.status, writer.status]).toEqual([201, 201]);
    expect(reader.body.key.scopes).toEqual(['invoices:read']);
    keys.read = reader.body.secret;
    keys.write = writer.body.secret;
  });

  it('each invoice route takes only a key with its scope, in keyhook’s error envelope', async () => {
    const readerWrites = await running.call('POST', '/api/v1/invoices', keys.read, {
      customer: 'Initech',
      amountCents: 1200,
    });
    expect(readerWrites.status).toBe(403);
    expect(readerWrites.body.error).toMatchObject({
      code: 'insufficient_scope',
      details: [{ scope: 'invoices:write' }],
    });
    const writerReads = await running.call('GET', '/api/v1/invoices', keys.write);
    expect(writerReads.status).toBe(403);
    expect(writerReads.body.error).toMatchObject({
      code: 'insufficient_scope',
      details: [{ scope: 'invoices:read' }],
    });
    expect((await running.call('GET', '/api/v1/invoices')).body.error.code).toBe('missing_credentials');
    expect((await running.call('GET', '/api/v1/invoices', 'sk_live_nope')).status).toBe(401);
  });

  it('the guard runs before the body is read: no key and a malformed body is 401, not 400 invalid_json', async () => {
    const reply = await requestJson('POST', `${running.base}/api/v1/invoices`, {
      body: new TextEncoder().encode('{'),
      headers: { 'content-type': 'application/json' },
    });
    expect(reply.status).toBe(401);
    expect(reply.body.error.code).toBe('missing_credentials');
  });

  it('webhooks subscribe only to declared events: invoice.refunded is 400', async () => {
    const refused = await running.call('POST', '/api/v1/admin/webhooks', keys.acme, {
      url: receiverUrl,
      events: ['invoice.refunded'],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('validation_failed');
    expect(refused.body.error.message).toContain('invoice.paid');

    const webhook = await running.call('POST', '/api/v1/admin/webhooks', keys.acme, {
      url: receiverUrl,
      events: ['invoice.created', 'invoice.paid'],
    });
    expect(webhook.status).toBe(201);
    webhookId = webhook.body.webhook.id;
    receiverConfig.secret = webhook.body.secret;
  });

  it('an invalid body is 400 validation_failed from the zod schema, and writes nothing', async () => {
    const invalid = await running.call('POST', '/api/v1/invoices', keys.write, {
      customer: 'Initech',
      amountCents: 12.5,
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error).toMatchObject({
      code: 'validation_failed',
      details: [{ path: 'amountCents' }],
    });
    const extra = await running.call('POST', '/api/v1/invoices', keys.write, {
      customer: 'Initech',
      amountCents: 100,
      tenantId: 'globex',
    });
    expect(extra.status).toBe(400);
    const broken = await fetch(`${running.base}/api/v1/invoices`, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.write}`, 'content-type': 'application/json' },
      body: '{"customer":',
    });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
    // PostgreSQL text cannot hold U+0000: a 400 from the schema, not a failed INSERT's 500.
    const nul = await running.call('POST', '/api/v1/invoices', keys.write, {
      customer: 'Ini\u0000tech',
      amountCents: 100,
    });
    expect(nul.status).toBe(400);
    expect(nul.body.error).toMatchObject({ code: 'validation_failed', details: [{ path: 'customer' }] });
    expect((await running.call('GET', '/api/v1/invoices', keys.read)).body).toEqual({
      data: [],
      nextCursor: null,
    });
    for (const query of [
      'limit=0',
      'limit=101',
      'limit=1&limit=2',
      'cursor=%00',
      'cursor=bm90LWFuLWludm9pY2U',
    ]) {
      const refused = await running.call('GET', `/api/v1/invoices?${query}`, keys.read);
      expect(refused.status, query).toBe(400);
      expect(refused.body.error.code, query).toBe('validation_failed');
    }
    // An id that create cannot have made names no invoice: 404, whatever its bytes.
    for (const id of ['%00', 'inv_%00', 'inv_unknown', `inv_${'0'.repeat(24)}`]) {
      expect((await running.call('GET', `/api/v1/invoices/${id}`, keys.read)).status, id).toBe(404);
      expect((await running.call('POST', `/api/v1/invoices/${id}/pay`, keys.write)).status, id).toBe(404);
    }
  });

  it('create and pay: both events reach the receiver, verified, under the custom header names', async () => {
    const created = await running.call('POST', '/api/v1/invoices', keys.write, {
      customer: '  Initech  ',
      amountCents: 125_000,
    });
    expect(created.status).toBe(201);
    const invoice = created.body.invoice;
    expect(invoice).toMatchObject({
      customer: 'Initech',
      amountCents: 125_000,
      status: 'draft',
      paidAt: null,
    });

    const payment = await running.call('POST', `/api/v1/invoices/${invoice.id}/pay`, keys.write);
    expect(payment.status).toBe(200);
    expect(payment.body.invoice).toMatchObject({ id: invoice.id, status: 'paid' });
    paid = { ...invoice, paidAt: payment.body.invoice.paidAt };

    const again = await running.call('POST', `/api/v1/invoices/${invoice.id}/pay`, keys.write);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('invoice_already_paid');
    const read = await running.call('GET', `/api/v1/invoices/${invoice.id}`, keys.read);
    expect(read.body.invoice).toEqual(payment.body.invoice);
    expect((await running.call('GET', '/api/v1/invoices', keys.read)).body.data).toEqual([
      payment.body.invoice,
    ]);

    await vi.waitFor(() => expect(received).toHaveLength(2), { timeout: 10_000, interval: 20 });
    const byType = Object.fromEntries(received.map((event) => [event.type, event]));
    expect(byType['invoice.created']).toMatchObject({
      id: invoiceEventId(invoice.id, 'created'),
      data: { invoiceId: invoice.id, customer: 'Initech', amountCents: 125_000 },
    });
    expect(byType['invoice.paid']).toMatchObject({
      id: invoiceEventId(invoice.id, 'paid'),
      data: { invoiceId: invoice.id, customer: 'Initech', amountCents: 125_000, paidAt: paid.paidAt },
    });
    expect(receivedHeaders).toHaveLength(2);
    for (const headers of receivedHeaders) {
      expect(headers['x-invoices-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(headers['x-chatbot-signature']).toBeUndefined();
    }
    // The receiver refuses a delivery whose id header differs from the signed body's id: both arrived equal.
    expect(receivedHeaders.map((headers) => headers['x-invoices-event-id']).sort()).toEqual(
      received.map((event) => event.id).sort(),
    );
    const deliveries = await running.call('GET', `/api/v1/admin/webhooks/${webhookId}/deliveries`, keys.acme);
    expect(deliveries.body.data).toHaveLength(2);
  });

  it('an invoice whose COMMIT fails takes its invoice.created with it: nothing is stored, nothing sent', async () => {
    const sql = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
    try {
      // A deferred trigger fails the app's transaction at COMMIT, after the insert and the publish ran.
      await sql.query(`CREATE FUNCTION "${schemas.app}".refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.customer = 'Fail At Commit' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NEW; END $$`);
      await sql.query(`CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON "${schemas.app}".invoices
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "${schemas.app}".refuse_at_commit()`);
      const refused = await running.call('POST', '/api/v1/invoices', keys.write, {
        customer: 'Fail At Commit',
        amountCents: 500,
      });
      expect(refused.status).toBe(500);
      expect(refused.body.error.code).toBe('internal_error');
      const rows = await sql.query(
        `SELECT id FROM "${schemas.app}".invoices WHERE customer = 'Fail At Commit'`,
      );
      expect(rows.rows).toEqual([]);
      const events = await sql.query(
        `SELECT id FROM "${schemas.keyhook}".keyhook_events WHERE payload LIKE '%Fail At Commit%'`,
      );
      expect(events.rows).toEqual([]);
      const deliveries = await running.call(
        'GET',
        `/api/v1/admin/webhooks/${webhookId}/deliveries`,
        keys.acme,
      );
      expect(deliveries.body.data).toHaveLength(2);
    } finally {
      await sql.end();
    }
  });

  it("another tenant's key gets 404 on acme's invoice, and sees none of acme's", async () => {
    const globexAdmin = await adminSessionFor('globex');
    const key = await running.call('POST', '/api/v1/admin/keys', globexAdmin, {
      name: 'globex',
      scopes: ['invoices:read', 'invoices:write'],
    });
    keys.globex = key.body.secret;
    const read = await running.call('GET', `/api/v1/invoices/${paid.id}`, keys.globex);
    expect(read.status).toBe(404);
    expect(read.body.error.code).toBe('not_found');
    expect((await running.call('POST', `/api/v1/invoices/${paid.id}/pay`, keys.globex)).status).toBe(404);
    expect((await running.call('GET', '/api/v1/invoices', keys.globex)).body).toEqual({
      data: [],
      nextCursor: null,
    });
    expect((await running.call('GET', '/api/v1/invoices/inv_unknown', keys.read)).status).toBe(404);
    // acme's webhook is not globex's: acme's admin cannot see it from globex either.
    expect((await running.call('GET', `/api/v1/admin/webhooks/${webhookId}`, globexAdmin)).status).toBe(404);
  });

  it("a publish refused inside the app's transaction rolls the app's own row back", async () => {
    const { db, table, keyhook, invoices } = running.instance;
    const draft = (id: string): Invoice => ({
      id,
      tenantId: 'rollback',
      customer: 'Umbrella',
      amountCents: 1200,
      status: 'draft',
      createdAt: new Date(),
      paidAt: null,
    });
    // What a buggy caller might hand over: JSON with a string amount, which the event schema refuses.
    const untrusted: { amountCents: number } = JSON.parse('{"amountCents":"12"}');
    const attempt = db.transaction(async (tx) => {
      await tx.insert(table).values(draft('inv_rolled_back'));
      await keyhook.events.publish(
        {
          tenantId: 'rollback',
          type: 'invoice.created',
          data: { invoiceId: 'inv_rolled_back', customer: 'Umbrella', amountCents: untrusted.amountCents },
        },
        { transaction: tx },
      );
    });
    await expect(attempt).rejects.toMatchObject({
      code: 'validation_failed',
      details: [{ path: 'data.amountCents' }],
    });
    expect(await invoices.get('rollback', 'inv_rolled_back')).toBeUndefined();

    // The same transaction with valid data commits both: the row and its event.
    await db.transaction(async (tx) => {
      await tx.insert(table).values(draft('inv_committed'));
      await keyhook.events.publish(
        {
          tenantId: 'rollback',
          type: 'invoice.created',
          id: invoiceEventId('inv_committed', 'created'),
          data: { invoiceId: 'inv_committed', customer: 'Umbrella', amountCents: 1200 },
        },
        { transaction: tx },
      );
    });
    expect(await invoices.get('rollback', 'inv_committed')).toMatchObject({ status: 'draft' });
    const events = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
    try {
      const { rows } = await events.query(
        `SELECT type FROM "${schemas.keyhook}".keyhook_events WHERE tenant_id = 'rollback'`,
      );
      expect(rows).toEqual([{ type: 'invoice.created' }]);
    } finally {
      await events.end();
    }
  });

  it('a connection that dies inside a Drizzle transaction fails that transaction, not the process', async () => {
    // Unheard, the client's 'error' would be an uncaught exception, and vitest fails the run on one.
    await expect(
      running.instance.db.transaction(async (tx) => {
        await tx.execute(sql`SELECT pg_terminate_backend(pg_backend_pid())`);
      }),
    ).rejects.toThrow();
    expect((await running.call('GET', '/api/v1/invoices', keys.read)).status).toBe(200);
  });

  it('pages through a tenant’s invoices, newest first, with nextCursor; a cursor never crosses tenants', async () => {
    const admin = await adminSessionFor('initrode');
    const key = (
      await running.call('POST', '/api/v1/admin/keys', admin, {
        name: 'pager',
        scopes: ['invoices:read', 'invoices:write'],
      })
    ).body.secret;
    const ids: string[] = [];
    for (const customer of ['First', 'Second', 'Third']) {
      ids.unshift(
        (await running.call('POST', '/api/v1/invoices', key, { customer, amountCents: 10 })).body.invoice.id,
      );
    }
    const first = await running.call('GET', '/api/v1/invoices?limit=2', key);
    expect(first.body.data.map((invoice: { id: string }) => invoice.id)).toEqual(ids.slice(0, 2));
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await running.call('GET', `/api/v1/invoices?limit=2&cursor=${first.body.nextCursor}`, key);
    expect(second.body).toEqual({ data: [expect.objectContaining({ id: ids[2] })], nextCursor: null });
    // acme's key with initrode's cursor: the position is looked up in acme's invoices only.
    const crossed = await running.call('GET', `/api/v1/invoices?cursor=${first.body.nextCursor}`, keys.read);
    expect(crossed.body).toEqual({ data: [], nextCursor: null });
  });

  it('concurrent payments of one invoice: one 200, the rest 409, one invoice.paid delivered', async () => {
    const { id } = (
      await running.call('POST', '/api/v1/invoices', keys.write, {
        customer: 'Massive Dynamic',
        amountCents: 777,
      })
    ).body.invoice;
    const payments = await Promise.all(
      Array.from({ length: 5 }, () => running.call('POST', `/api/v1/invoices/${id}/pay`, keys.write)),
    );
    expect(payments.map((payment) => payment.status).sort()).toEqual([200, 409, 409, 409, 409]);
    // The row lock makes the losers see `paid`: without it they would reach publish and conflict there.
    for (const payment of payments.filter((payment) => payment.status === 409)) {
      expect(payment.body.error.code).toBe('invoice_already_paid');
    }
    const ofThisInvoice = () =>
      received.filter((event) => event.data.invoiceId === id).map((event) => event.type);
    await vi.waitFor(() => expect(ofThisInvoice()).toHaveLength(2), { timeout: 10_000, interval: 20 });
    expect(ofThisInvoice().sort()).toEqual(['invoice.created', 'invoice.paid']);
    const read = await running.call('GET', `/api/v1/invoices/${id}`, keys.read);
    expect(read.body.invoice.paidAt).toBe(
      payments.find((payment) => payment.status === 200)!.body.invoice.paidAt,
    );
  });

  it('POST /pay whose invoice.paid is refused leaves the invoice a draft', async () => {
    const created = await running.call('POST', '/api/v1/invoices', keys.globex, {
      customer: 'Hooli',
      amountCents: 990,
    });
    const { id } = created.body.invoice;
    // Another invoice.paid already holds this invoice's event id, with other data: publish refuses the pay's.
    await running.instance.keyhook.events.publish({
      tenantId: 'globex',
      type: 'invoice.paid',
      id: invoiceEventId(id, 'paid'),
      data: { invoiceId: id, customer: 'Hooli', amountCents: 990, paidAt: '2020-01-01T00:00:00.000Z' },
    });
    const payment = await running.call('POST', `/api/v1/invoices/${id}/pay`, keys.globex);
    expect(payment.status).toBe(409);
    expect(payment.body.error.code).toBe('idempotency_conflict');
    const read = await running.call('GET', `/api/v1/invoices/${id}`, keys.globex);
    expect(read.body.invoice).toMatchObject({ status: 'draft', paidAt: null });
  });
});
