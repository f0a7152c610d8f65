import { randomBytes } from 'node:crypto';
import { type AddressInfo, connect } from 'node:net';
import { sign, type WebhookEvent } from '@keyhook/webhook-verify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReceiver } from '../src/receiver.js';

// A signing secret as keyhook mints one: whsec_ and 32 random bytes in hex.
const mintSecret = () => `whsec_${randomBytes(32).toString('hex')}`;
const secret = mintSecret();
const signatureHeader = (key: string, body: string, unixSeconds: number) =>
  sign(body, key, { now: unixSeconds * 1000 });
const now = () => Math.floor(Date.now() / 1000);

describe('examples/receiver over real HTTP', () => {
  let baseUrl: string;
  let handled: WebhookEvent[];
  let order: string[];
  let release: () => void;
  let finished: Promise<void>;
  let close: () => Promise<void>;

  beforeEach(async () => {
    handled = [];
    order = [];
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let markFinished: () => void = () => {};
    finished = new Promise<void>((resolve) => {
      markFinished = resolve;
    });
    const server = createReceiver({
      secret,
      handle: async (event) => {
        order.push(`handle start ${event.id}`);
        await gate; // slow work: the sender must not wait for it
        handled.push(event);
        markFinished();
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => new Promise((resolve) => server.close(() => resolve()));
  });

  afterEach(async () => {
    release();
    await close();
  });

  const deliver = async (id: string, options: { body?: string; header?: string; eventId?: string } = {}) => {
    const body =
      options.body ??
      JSON.stringify({
        id,
        type: 'run.completed',
        createdAt: new Date().toISOString(),
        data: { runId: 'run_1' },
      });
    const response = await fetch(baseUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-chatbot-event-id': options.eventId ?? id,
        'x-chatbot-signature': options.header ?? signatureHeader(secret, body, now()),
      },
      body,
    });
    order.push(`answered ${response.status}`);
    // biome-ignore lint/suspicious/noExplicitAny: the test checks the answer's shape field by field
    return { status: response.status, body: (await response.json()) as any };
  };

  it('answers 200 before the work runs, and does the work once per event id', async () => {
    expect(await deliver('evt_1')).toEqual({ status: 200, body: { received: true } });
    // A redelivery of the same event (at least once): taken once.
    expect(await deliver('evt_1')).toEqual({ status: 200, body: { received: true, duplicate: true } });
    // Both answers came back while the work was still held at its gate.
    expect(order).toContain('handle start evt_1');
    expect(handled).toEqual([]);
    release();
    await finished;
    expect(handled.map((e) => e.id)).toEqual(['evt_1']);
  });

  it('refuses a tampered body, a wrong secret and a stale timestamp with 400 and the reason', async () => {
    const body = JSON.stringify({
      id: 'evt_2',
      type: 'run.failed',
      createdAt: new Date().toISOString(),
      data: {},
    });
    const header = signatureHeader(secret, body, now());
    expect(await deliver('evt_2', { body: body.replace('run.failed', 'run.completed'), header })).toEqual({
      status: 400,
      body: { error: 'signature_mismatch' },
    });
    const other = mintSecret();
    expect((await deliver('evt_2', { body, header: signatureHeader(other, body, now()) })).body.error).toBe(
      'signature_mismatch',
    );
    expect(
      (await deliver('evt_2', { body, header: signatureHeader(secret, body, now() - 301) })).body.error,
    ).toBe('timestamp_out_of_tolerance');
    expect((await deliver('evt_2', { body, header: '' })).body.error).toBe('missing_signature');
    expect(await deliver('evt_2', { body, header, eventId: 'evt_other' })).toEqual({
      status: 400,
      body: { error: 'event_id_mismatch' },
    });
    release();
    expect(handled).toEqual([]);
  });

  it('refuses a body over its limit with 413', async () => {
    const big = JSON.stringify({
      id: 'evt_3',
      type: 'run.completed',
      createdAt: '',
      data: { pad: 'x'.repeat(1_100_000) },
    });
    expect((await deliver('evt_3', { body: big })).status).toBe(413);
  });

  it('survives a sender that hangs up halfway through the body', async () => {
    const port = Number(new URL(baseUrl).port);
    await new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{"id":');
        setImmediate(() => {
          socket.destroy();
          resolve();
        });
      });
    });
    expect((await deliver('evt_after_abort')).status).toBe(200);
  });

  it('a failing onError and a misconfigured secret never take the receiver down; the latter is a 500', async () => {
    const internal: unknown[] = [];
    let calls = 0;
    const body = JSON.stringify({ id: 'evt_x', type: 'run.completed', createdAt: '', data: {} });
    const broken = createReceiver({
      secret: 'not-a-whsec-secret',
      handle: () => {},
      onInternalError: (error) => internal.push(error),
    });
    const throwing = createReceiver({
      secret,
      handle: () => {
        calls++;
        throw new Error('handler failed');
      },
      onError: () => {
        throw new Error('onError failed too');
      },
    });
    const servers = [broken, throwing];
    for (const server of servers)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = (server: typeof broken) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const post = (server: typeof broken) =>
      fetch(url(server), {
        method: 'POST',
        headers: {
          'x-chatbot-event-id': 'evt_x',
          'x-chatbot-signature': signatureHeader(secret, body, now()),
        },
        body,
      });
    try {
      expect((await post(broken)).status).toBe(500);
      expect(String(internal[0])).toMatch(/whsec_/);
      expect((await post(throwing)).status).toBe(200);
      await new Promise((resolve) => setImmediate(resolve));
      expect(calls).toBe(1);
      expect((await post(broken)).status).toBe(500); // still serving
    } finally {
      for (const server of servers) server.close();
    }
  });
});
