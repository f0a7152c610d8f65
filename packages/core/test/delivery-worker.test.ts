import { createHmac } from 'node:crypto';
import {
  createKeyhook,
  type DeliveryOptions,
  type DeliveryWorker,
  type Keyhook,
  KeyhookError,
  type KeyhookOptions,
  MemoryStore,
  type WebhookView,
} from '@keyhook/core';
import {
  answer,
  FakeClock,
  TEST_ADMIN_SECRET,
  TEST_ENCRYPTION_KEY,
  TestReceiver,
} from '@keyhook/testing/support';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EVENT_ID_HEADER, SIGNATURE_HEADER } from '../src/delivery/signature.js';
import { RECORDING_PER_SLOT } from '../src/delivery/worker.js';

/** The default schedule's shape, in milliseconds instead of minutes. */
const FAST_SCHEDULE = [40, 80, 120, 160, 200, 240];
const TENANT = 'tenant_a';

interface Logged {
  level: string;
  context: object;
  message: string;
}

let receiver: TestReceiver;
let keyhook: Keyhook;
let worker: DeliveryWorker;
let store: MemoryStore;
let logs: Logged[];
let disabled: WebhookView[];

function setUp(delivery: DeliveryOptions = {}, extra: Partial<KeyhookOptions> = {}) {
  store = new MemoryStore();
  logs = [];
  disabled = [];
  const record = (level: string) => (context: object, message: string) =>
    logs.push({ level, context, message });
  keyhook = createKeyhook({
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    mode: 'development',
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: { info: record('info'), warn: record('warn'), error: record('error') },
    delivery: {
      retrySchedule: FAST_SCHEDULE,
      timeoutMs: 500,
      onEndpointDisabled: (webhook) => {
        disabled.push(webhook);
      },
      ...delivery,
    },
    ...extra,
  });
  worker = keyhook.createWorker({ pollIntervalMs: 50 });
  worker.start();
}

async function webhookTo(
  path: string,
  events: Parameters<Keyhook['webhooks']['create']>[1]['events'] = ['run.completed'],
) {
  return keyhook.webhooks.create(TENANT, { url: receiver.url(path), events });
}

const publish = (data: Record<string, unknown> = { runId: 'run_1' }, id?: string) =>
  keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data, id });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `check` passes, polling; the last failure is the test's. */
async function eventually(check: () => Promise<void> | void, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(20);
    }
  }
}

function expectedSignature(secret: string, t: string, body: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.${body}`).digest('hex');
}

beforeEach(async () => {
  receiver = await TestReceiver.start();
});

afterEach(async () => {
  await keyhook?.close();
  await receiver.close();
});

describe('delivery over real HTTP (docs/decisions.md §8)', () => {
  it('sends the stored body once, signed with the endpoint secret, with the event id; nothing after a 2xx', async () => {
    setUp();
    const { webhook, secret } = await webhookTo('/ok');
    const published = await publish({ runId: 'run_1', note: 'naïve ✓' });
    await receiver.waitFor((r) => r.length === 1);
    const [request] = receiver.to('/ok');
    expect(request!.method).toBe('POST');
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers[EVENT_ID_HEADER]).toBe(published.event.id);
    expect(request!.body).toBe(published.event.payload);
    expect(JSON.parse(request!.body)).toEqual({
      id: published.event.id,
      type: 'run.completed',
      createdAt: published.event.createdAt.toISOString(),
      data: { runId: 'run_1', note: 'naïve ✓' },
    });
    const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(request!.headers[SIGNATURE_HEADER]));
    expect(match).not.toBeNull();
    expect(Math.abs(Number(match![1]) - Date.now() / 1000)).toBeLessThan(5);
    expect(match![2]).toBe(expectedSignature(secret, match![1]!, request!.body));
    await eventually(async () => {
      const { delivery, attempts } = await keyhook.deliveries.get(
        TENANT,
        webhook.id,
        published.deliveries[0]!.id,
      );
      expect(delivery.status).toBe('succeeded');
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ attempt: 1, statusCode: 200, error: null, responseBody: 'ok' });
    });
    await sleep(FAST_SCHEDULE.reduce((a, b) => a + b) + 100);
    expect(receiver.requests).toHaveLength(1);
  });

  it('goes out at once on publish, woken rather than polled', async () => {
    setUp();
    await worker.stop();
    worker = keyhook.createWorker({ pollIntervalMs: 60_000 });
    worker.start();
    await sleep(50); // the worker is idle in its (minute-long) poll
    await webhookTo('/ok');
    const started = Date.now();
    await publish();
    await receiver.waitFor((r) => r.length === 1, 2000);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('retries on the configured schedule, 7 attempts in all, with the same id and bytes, then fails', async () => {
    setUp();
    receiver.on('/down', answer(500, 'nope'));
    const { webhook } = await webhookTo('/down');
    const published = await publish();
    await receiver.waitFor((r) => r.length === 7);
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
      expect(detail.delivery.status).toBe('failed');
      expect(detail.attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(detail.attempts.every((a) => a.statusCode === 500 && a.responseBody === 'nope')).toBe(true);
    });
    const sent = receiver.to('/down');
    expect(new Set(sent.map((r) => r.body))).toEqual(new Set([published.event.payload]));
    expect(new Set(sent.map((r) => r.headers[EVENT_ID_HEADER]))).toEqual(new Set([published.event.id]));
    // Each gap is at least the schedule's step less the jitter (-10 %).
    for (let i = 1; i < sent.length; i++) {
      const gap = sent[i]!.receivedAt - sent[i - 1]!.receivedAt;
      expect(gap).toBeGreaterThanOrEqual(Math.floor(FAST_SCHEDULE[i - 1]! * 0.9) - 2);
    }
    await sleep(400);
    expect(receiver.requests).toHaveLength(7);
  });

  it('a 410 fails the delivery at once; a Retry-After on 503 pushes the retry later, on 500 it does not', async () => {
    setUp();
    receiver.on('/gone', answer(410));
    receiver.on('/busy', (_r, index, res) =>
      index === 0 ? res.writeHead(503, { 'retry-after': '1' }).end() : res.writeHead(200).end(),
    );
    receiver.on('/err', (_r, index, res) =>
      index === 0 ? res.writeHead(500, { 'retry-after': '30' }).end() : res.writeHead(200).end(),
    );
    const gone = await webhookTo('/gone', ['run.completed']);
    await webhookTo('/busy', ['run.completed', 'run.failed']);
    await webhookTo('/err', ['apply.failed', 'run.completed']);
    const published = await publish();
    await receiver.waitFor((r) => r.filter((x) => x.path === '/busy').length === 2, 5000);
    await receiver.waitFor((r) => r.filter((x) => x.path === '/err').length === 2, 5000);
    const busy = receiver.to('/busy');
    expect(busy[1]!.receivedAt - busy[0]!.receivedAt).toBeGreaterThanOrEqual(990);
    const err = receiver.to('/err');
    expect(err[1]!.receivedAt - err[0]!.receivedAt).toBeLessThan(900);
    const goneDelivery = published.deliveries.find((d) => d.webhookId === gone.webhook.id)!;
    const detail = await keyhook.deliveries.get(TENANT, gone.webhook.id, goneDelivery.id);
    expect(detail.delivery.status).toBe('failed');
    expect(receiver.to('/gone')).toHaveLength(1);
  });

  it('five permanent failures disable the endpoint (callback fires); then nothing is sent until re-enabled', async () => {
    setUp();
    let up = false;
    receiver.on('/flaky', (_r, _i, res) => res.writeHead(up ? 200 : 410).end());
    const { webhook } = await webhookTo('/flaky');
    for (let i = 0; i < 5; i++) await publish({ n: i });
    await eventually(async () => {
      expect((await keyhook.webhooks.get(TENANT, webhook.id)).status).toBe('disabled');
    });
    expect(disabled).toEqual([
      expect.objectContaining({ id: webhook.id, status: 'disabled', disabledReason: 'failures' }),
    ]);
    expect(JSON.stringify(disabled)).not.toContain('whsec_');
    expect(logs.some((l) => l.level === 'warn' && l.message.includes('disabled after 5'))).toBe(true);
    const before = receiver.requests.length;
    expect(before).toBe(5);
    const held = await publish({ n: 'held' });
    expect(held.deliveries[0]!.status).toBe('held');
    await sleep(300);
    expect(receiver.requests).toHaveLength(before);
    up = true;
    await keyhook.webhooks.update(TENANT, webhook.id, { status: 'active' });
    await receiver.waitFor((r) => r.length === before + 1, 2000);
    expect(receiver.requests.at(-1)!.headers[EVENT_ID_HEADER]).toBe(held.event.id);
  });

  it('a success resets the count: four failures, a success, four failures leave the endpoint active', async () => {
    setUp();
    const plan = [410, 410, 410, 410, 200, 410, 410, 410, 410];
    receiver.on('/mixed', (_r, index, res) => res.writeHead(plan[index] ?? 200).end());
    const { webhook } = await webhookTo('/mixed');
    for (let i = 0; i < plan.length; i++) {
      await publish({ n: i });
      await receiver.waitFor((r) => r.length === i + 1);
    }
    await sleep(100);
    expect((await keyhook.webhooks.get(TENANT, webhook.id)).status).toBe('active');
    expect(disabled).toEqual([]);
  });

  it('PATCH disabled by hand pauses deliveries; PATCH active sends them at once', async () => {
    setUp();
    const { webhook } = await webhookTo('/ok');
    await keyhook.webhooks.update(TENANT, webhook.id, { status: 'disabled' });
    const published = await publish();
    expect(published.deliveries[0]!.status).toBe('held');
    await sleep(300);
    expect(receiver.requests).toHaveLength(0);
    await keyhook.webhooks.update(TENANT, webhook.id, { status: 'active' });
    await receiver.waitFor((r) => r.length === 1, 1000);
  });

  it('after a secret rotation the next attempt is signed with the new secret only', async () => {
    setUp();
    receiver.on('/rot', (_r, index, res) => res.writeHead(index === 0 ? 500 : 200).end());
    const { webhook, secret: oldSecret } = await webhookTo('/rot');
    await publish();
    await receiver.waitFor((r) => r.length === 1);
    const { secret: newSecret } = await keyhook.webhooks.rotate(TENANT, webhook.id);
    await receiver.waitFor((r) => r.length === 2);
    const [first, second] = receiver.to('/rot');
    const parse = (header: unknown) => /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header))!;
    const [, t1, v1] = parse(first!.headers[SIGNATURE_HEADER]);
    expect(v1).toBe(expectedSignature(oldSecret, t1!, first!.body));
    const [, t2, v2] = parse(second!.headers[SIGNATURE_HEADER]);
    expect(v2).toBe(expectedSignature(newSecret, t2!, second!.body));
    expect(v2).not.toBe(expectedSignature(oldSecret, t2!, second!.body));
    expect(String(second!.headers[SIGNATURE_HEADER]).match(/v1=/g)).toHaveLength(1);
  });

  it('never follows a redirect, gives up at the timeout (a status in time stands), and keeps at most 4 KiB of an answer', async () => {
    setUp();
    receiver.on('/moved', answer(302, '', { location: receiver.url('/target') }));
    receiver.on('/slow', () => {}); // never answers
    // Answers in time, then never finishes its body.
    receiver.on('/stalled', (_r, _i, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    receiver.on('/big', answer(200, 'x'.repeat(10_000)));
    const moved = await webhookTo('/moved', ['run.completed']);
    const slow = await webhookTo('/slow', ['run.completed', 'run.failed']);
    const big = await webhookTo('/big', ['apply.failed', 'run.completed']);
    const stalled = await webhookTo('/stalled', ['run.completed']);
    const published = await publish();
    const attemptsOf = async (webhookId: string) => {
      const delivery = published.deliveries.find((d) => d.webhookId === webhookId)!;
      return (await keyhook.deliveries.get(TENANT, webhookId, delivery.id)).attempts;
    };
    await eventually(async () => {
      expect((await attemptsOf(moved.webhook.id))[0]).toMatchObject({
        statusCode: 302,
        error: 'redirects are not followed',
      });
      const [timedOut] = await attemptsOf(slow.webhook.id);
      expect(timedOut).toMatchObject({
        statusCode: null,
        error: 'timed out after 500 ms',
        responseBody: null,
      });
      expect(timedOut!.durationMs).toBeGreaterThanOrEqual(490);
      const [large] = await attemptsOf(big.webhook.id);
      expect(large!.statusCode).toBe(200);
      expect(large!.responseBody).toBe('x'.repeat(4096));
      // The status came in time and stands, with the part of the body that came by the deadline.
      const [cut] = await attemptsOf(stalled.webhook.id);
      expect(cut).toMatchObject({ statusCode: 200, error: null, responseBody: 'partial' });
      expect(cut!.durationMs).toBeGreaterThanOrEqual(490);
    }, 3000);
    expect(receiver.to('/target')).toHaveLength(0);
  });

  it('keeps a U+0000 in an answer as U+FFFD, so every store can log the attempt', async () => {
    setUp();
    receiver.on('/nul', answer(200, 'a\u0000b'));
    const { webhook } = await webhookTo('/nul');
    const published = await publish();
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
      expect(detail.delivery.status).toBe('succeeded');
      expect(detail.attempts[0]!.responseBody).toBe('a\uFFFDb');
    });
  });

  it('outside development, connects only to an address the policy allows, whatever DNS says', async () => {
    let answers: { address: string; family: 4 | 6 }[] = [{ address: '93.184.216.34', family: 4 }];
    setUp({ lookup: async () => answers }, { mode: 'production', webhookUrlPolicy: { allowHttp: true } });
    const { webhook } = await keyhook.webhooks.create(TENANT, {
      url: `http://rebind.example.com:${new URL(receiver.url('/')).port}/hook`,
      events: ['run.completed'],
    });
    // Checked at create against the name only; by the time of the attempt it resolves to loopback.
    answers = [{ address: '127.0.0.1', family: 4 }];
    const published = await publish();
    await eventually(async () => {
      const { attempts } = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
      expect(attempts[0]?.error).toMatch(/non-public address \(127\.0\.0\.1\)/);
    });
    expect(receiver.requests).toHaveLength(0);
  });

  it('stop() lets the attempt in flight finish and record before it resolves', async () => {
    setUp();
    receiver.on('/slowish', (_r, _i, res) => setTimeout(() => res.writeHead(200).end('late'), 200));
    const { webhook } = await webhookTo('/slowish');
    const published = await publish();
    await sleep(50);
    await worker.stop();
    const { delivery, attempts } = await keyhook.deliveries.get(
      TENANT,
      webhook.id,
      published.deliveries[0]!.id,
    );
    expect(delivery.status).toBe('succeeded');
    expect(attempts[0]!.responseBody).toBe('late');
  });

  it('an attempt leaves its slot once answered and is recorded beside the next sends, up to twice the concurrency; stop() waits for the records', async () => {
    setUp();
    await worker.stop();
    const concurrency = 2;
    worker = keyhook.createWorker({ pollIntervalMs: 50, concurrency });
    worker.start();
    // The store records nothing while the gate is shut.
    const complete = store.completeAttempt.bind(store);
    let opened: () => void = () => {};
    let gate = Promise.resolve();
    const shut = () => {
      gate = new Promise((resolve) => {
        opened = resolve;
      });
    };
    let waiting = 0;
    store.completeAttempt = async (completion) => {
      waiting++;
      await gate;
      waiting--;
      return complete(completion);
    };
    shut();
    const { webhook } = await webhookTo('/ok');
    const published = await Promise.all(Array.from({ length: 10 }, (_, i) => publish({ i })));
    // Two slots send; four answered attempts wait for their records outside them; the next two
    // keep their slots until a record is written, so sending stops there.
    const most = concurrency + concurrency * RECORDING_PER_SLOT;
    await receiver.waitFor((r) => r.length === most);
    await sleep(300);
    expect(receiver.requests).toHaveLength(most);
    expect(waiting).toBe(most);
    opened();
    await receiver.waitFor((r) => r.length === 10, 5000);
    const statuses = async () =>
      Promise.all(
        published.map(
          async (p) =>
            (await keyhook.deliveries.get(TENANT, webhook.id, p.deliveries[0]!.id)).delivery.status,
        ),
      );
    await eventually(async () => expect(await statuses()).toEqual(Array(10).fill('succeeded')));

    shut();
    const last = await publish({ i: 10 });
    await receiver.waitFor((r) => r.length === 11);
    let stopped = false;
    const stopping = worker.stop().then(() => {
      stopped = true;
    });
    await sleep(100);
    expect(stopped).toBe(false);
    const before = await keyhook.deliveries.get(TENANT, webhook.id, last.deliveries[0]!.id);
    expect(before.delivery.status).toBe('in_flight');
    opened();
    await stopping;
    const after = await keyhook.deliveries.get(TENANT, webhook.id, last.deliveries[0]!.id);
    expect(after.delivery.status).toBe('succeeded');
  });

  it('backs off through a store outage, logs it, and delivers once the store is back', async () => {
    setUp();
    await worker.stop();
    const lease = store.leaseDeliveries.bind(store);
    let failing = true;
    store.leaseDeliveries = async (request) => {
      if (failing) throw new KeyhookError('unavailable', 'The store is unreachable.');
      return lease(request);
    };
    await webhookTo('/ok');
    await publish();
    worker = keyhook.createWorker({ pollIntervalMs: 50 });
    worker.start();
    await sleep(400);
    expect(receiver.requests).toHaveLength(0);
    expect(logs.filter((l) => l.message.includes('could not lease deliveries'))).toHaveLength(1);
    failing = false;
    await receiver.waitFor((r) => r.length === 1, 6000);
    await eventually(() =>
      expect(logs.some((l) => l.message.includes('reached the store again'))).toBe(true),
    );
  });
});

describe('the publish handoff (a worker of the publishing process)', () => {
  /** Records every delivery a lease query handed out. */
  function watchLeases(): string[] {
    const leasedByQuery: string[] = [];
    const lease = store.leaseDeliveries.bind(store);
    store.leaseDeliveries = async (request) => {
      const leased = await lease(request);
      leasedByQuery.push(...leased.map((l) => l.delivery.id));
      return leased;
    };
    return leasedByQuery;
  }

  it("sends a publish's delivery under the lease the publish took, never through a lease query", async () => {
    setUp();
    const leasedByQuery = watchLeases();
    const { webhook } = await webhookTo('/ok');
    const published = await publish();
    const [delivery] = published.deliveries;
    expect(delivery).toMatchObject({ status: 'in_flight', attempts: 0 });
    await receiver.waitFor((r) => r.length === 1);
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, delivery!.id);
      expect(detail.delivery.status).toBe('succeeded');
    });
    expect(leasedByQuery).toEqual([]);
  });

  it("handoffs and leases share the worker's room: never more attempts at once than its concurrency", async () => {
    setUp();
    await worker.stop();
    worker = keyhook.createWorker({ pollIntervalMs: 50, concurrency: 2 });
    worker.start();
    const leasedByQuery = watchLeases();
    let open = 0;
    let most = 0;
    receiver.on('/slow', (_r, _i, res) => {
      most = Math.max(most, ++open);
      setTimeout(() => {
        open--;
        res.writeHead(200).end();
      }, 60);
    });
    await webhookTo('/slow');
    const published = await Promise.all(Array.from({ length: 10 }, (_, i) => publish({ i })));
    // Two were handed over to run at once and two more to wait beside them; the rest were
    // written pending for the lease.
    expect(published.map((p) => p.deliveries[0]!.status).sort()).toEqual([
      ...Array(4).fill('in_flight'),
      ...Array(6).fill('pending'),
    ]);
    await receiver.waitFor((r) => r.length === 10, 5000);
    expect(most).toBe(2);
    expect(leasedByQuery).toHaveLength(6);
    expect(new Set(receiver.requests.map((r) => r.headers[EVENT_ID_HEADER])).size).toBe(10);
  });

  it('a handed-over delivery that could not finish inside its lease waits for the lease to run out', async () => {
    setUp();
    await worker.stop();
    // Attempts may take 500 ms; a lease lasts 600 ms from the publish.
    worker = keyhook.createWorker({ pollIntervalMs: 20, concurrency: 1, leaseMs: 600 });
    worker.start();
    receiver.on('/slow', (_r, index, res) => {
      setTimeout(() => res.writeHead(200).end(), index === 0 ? 300 : 0);
    });
    await webhookTo('/slow');
    const started = Date.now();
    const [first, second] = await Promise.all([publish({ n: 1 }), publish({ n: 2 })]);
    expect([first!.deliveries[0]!.status, second!.deliveries[0]!.status]).toEqual(['in_flight', 'in_flight']);
    await receiver.waitFor((r) => r.length === 2, 5000);
    // The second waited 300 ms behind the first: too late to start under its lease, so it went
    // out only once that lease ran out, leased again; and once only.
    expect(receiver.requests[1]!.receivedAt - started).toBeGreaterThanOrEqual(600);
    await sleep(100);
    expect(receiver.requests).toHaveLength(2);
  });

  it('a delivery handed over while the worker was leasing goes out when the lease returns, not at its lease expiry', async () => {
    setUp();
    const { webhook } = await webhookTo('/ok');
    const lease = store.leaseDeliveries.bind(store);
    let letLeaseThrough!: () => void;
    const gate = new Promise<void>((resolve) => {
      letLeaseThrough = resolve;
    });
    let leasing = false;
    store.leaseDeliveries = async (request) => {
      leasing = true;
      await gate;
      return lease(request);
    };
    worker.wake();
    await eventually(async () => expect(leasing).toBe(true));
    // The worker's room is the lease's now: the publish's handover has to wait for a slot.
    const published = await publish();
    expect(published.deliveries[0]!.status).toBe('in_flight');
    letLeaseThrough();
    // The lease runs 30.5 s: waiting for its expiry would fail this.
    await receiver.waitFor((r) => r.length === 1, 3000);
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
      expect(detail.delivery.status).toBe('succeeded');
    });
  });

  it('stop() waits for a publish that set room aside, then sends what it handed over', async () => {
    setUp();
    const { webhook } = await webhookTo('/ok');
    const write = store.publishEvent.bind(store);
    let letThrough!: () => void;
    const gate = new Promise<void>((resolve) => {
      letThrough = resolve;
    });
    store.publishEvent = async (...args) => {
      await gate;
      return write(...args);
    };
    const publishing = publish();
    await sleep(20); // the publish has reserved its slot and waits on the store
    let stopped = false;
    const stopping = worker.stop().then(() => {
      stopped = true;
    });
    await sleep(50);
    expect(stopped).toBe(false);
    letThrough();
    const published = await publishing;
    await stopping;
    const detail = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
    expect(detail.delivery.status).toBe('succeeded');
    expect(receiver.requests).toHaveLength(1);
  });

  it('a publish that fails gives its room back', async () => {
    setUp();
    await worker.stop();
    worker = keyhook.createWorker({ pollIntervalMs: 50, concurrency: 1 });
    worker.start();
    await webhookTo('/ok');
    const write = store.publishEvent.bind(store);
    store.publishEvent = async () => {
      throw new KeyhookError('unavailable', 'The store is unreachable.');
    };
    await expect(publish()).rejects.toMatchObject({ code: 'unavailable' });
    store.publishEvent = write;
    // The one slot is free again: the next publish is handed over, not left pending.
    const published = await publish();
    expect(published.deliveries[0]!.status).toBe('in_flight');
    await receiver.waitFor((r) => r.length === 1);
  });
});

describe('events.publish', () => {
  it('is idempotent on id: a replay writes nothing; the same id with other data is refused', async () => {
    setUp();
    await webhookTo('/ok');
    const first = await publish({ a: 1, b: 2 }, 'evt_order_42_paid');
    const again = await publish({ b: 2, a: 1 }, 'evt_order_42_paid');
    expect(again).toMatchObject({ replayed: true, deliveries: [], event: first.event });
    await expect(publish({ a: 2 }, 'evt_order_42_paid')).rejects.toMatchObject({
      code: 'idempotency_conflict',
    });
    await receiver.waitFor((r) => r.length === 1);
    await sleep(200);
    expect(receiver.requests).toHaveLength(1);
  });

  it('refuses an unknown type, data that is not an object, a bad id, and a body over 256 KiB', async () => {
    setUp();
    const refuse = (input: unknown) =>
      expect(keyhook.events.publish(input as never)).rejects.toMatchObject({ code: 'validation_failed' });
    await refuse({ tenantId: TENANT, type: 'user.created', data: {} });
    await refuse({ tenantId: TENANT, type: 'run.completed', data: [1] });
    await refuse({ tenantId: TENANT, type: 'run.completed', data: {}, id: 'order-1' });
    await refuse({ tenantId: '', type: 'run.completed', data: {} });
    await refuse({ tenantId: TENANT, type: 'run.completed', data: { big: 'x'.repeat(256 * 1024) } });
    await refuse({ tenantId: TENANT, type: 'run.completed', data: { n: 1n } });
  });
});

describe('retention (delivery.retentionMs)', () => {
  it('deletes a finished delivery, its attempts and its event once the retention passed; a held one stays', async () => {
    // The purge's timer is real (a round every 100 ms for this retention); its cutoff is the clock's.
    const clock = new FakeClock(new Date());
    setUp({ retentionMs: 1000 }, { clock });
    const { webhook } = await webhookTo('/ok');
    const paused = await webhookTo('/paused');
    await keyhook.webhooks.update(TENANT, paused.webhook.id, { status: 'disabled' });
    const published = await publish({ runId: 'run_old' }, 'evt_retention_1');
    const [sent, held] = [
      published.deliveries.find((d) => d.webhookId === webhook.id)!,
      published.deliveries.find((d) => d.webhookId === paused.webhook.id)!,
    ];
    await eventually(async () => {
      expect((await keyhook.deliveries.get(TENANT, webhook.id, sent.id)).delivery.status).toBe('succeeded');
    });
    // Rounds run, but the retention has not passed on the clock: nothing goes.
    await sleep(350);
    expect((await keyhook.deliveries.get(TENANT, webhook.id, sent.id)).attempts).toHaveLength(1);
    clock.advance(1000);
    await eventually(async () => {
      await expect(keyhook.deliveries.get(TENANT, webhook.id, sent.id)).rejects.toMatchObject({
        code: 'not_found',
      });
    }, 3000);
    const stillHeld = await keyhook.deliveries.get(TENANT, paused.webhook.id, held.id);
    expect(stillHeld.delivery.status).toBe('held');
    // The event stays while its held delivery refers to it: the id is still taken.
    expect((await publish({ runId: 'run_old' }, 'evt_retention_1')).replayed).toBe(true);
  });

  it('refuses a retention under a second, or not whole milliseconds', () => {
    for (const retentionMs of [999, 0, -1, 1500.5, Number.NaN])
      expect(() =>
        createKeyhook({
          store: new MemoryStore(),
          adminSession: { secret: TEST_ADMIN_SECRET },
          encryptionKey: TEST_ENCRYPTION_KEY,
          delivery: { retentionMs },
        }),
      ).toThrow(/retentionMs must be whole milliseconds, at least 1000/);
  });
});
