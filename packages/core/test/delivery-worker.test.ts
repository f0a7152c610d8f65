import { createHmac } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  createKeyhook,
  type DeliveryOptions,
  type DeliveryWorker,
  type Keyhook,
  KeyhookError,
  type KeyhookOptions,
  MemoryStore,
  type Timers,
  type WebhookView,
} from '@keyhook/core';
import {
  answer,
  TEST_ADMIN_SECRET,
  TEST_CATALOG,
  TEST_ENCRYPTION_KEY,
  TestReceiver,
  VirtualClock,
} from '@keyhook/testing/support';
import { Agent } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EVENT_ID_HEADER, SIGNATURE_HEADER } from '../src/delivery/signature.js';
import { HELD_EXPIRY_INTERVAL_MS, RECORDING_PER_SLOT } from '../src/delivery/worker.js';
import { eventually } from './worker-harness.js';

/** The default schedule's shape, in milliseconds instead of minutes. */
const FAST_SCHEDULE = [40, 80, 120, 160, 200, 240];
const TENANT = 'tenant_a';

interface Logged {
  level: string;
  context: object;
  message: string;
}

let receiver: TestReceiver;
/**
 * The worker's clock and timers: its polls, retries, backoffs and purges run as a test moves
 * this clock, never on the wall clock. HTTP to the receiver is real, and takes real time.
 */
let clock: VirtualClock;
let keyhook: Keyhook;
let worker: DeliveryWorker;
let store: MemoryStore;
let logs: Logged[];
let disabled: WebhookView[];

function setUp(delivery: DeliveryOptions = {}, extra: Partial<KeyhookOptions> = {}) {
  store = new MemoryStore();
  clock = new VirtualClock();
  logs = [];
  disabled = [];
  const record = (level: string) => (context: object, message: string) =>
    logs.push({ level, context, message });
  keyhook = createKeyhook({
    ...TEST_CATALOG,
    store,
    adminSession: { secret: TEST_ADMIN_SECRET },
    mode: 'development',
    encryptionKey: TEST_ENCRYPTION_KEY,
    clock,
    timers: clock,
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

/**
 * A receiver's answers held back until the test lets them go: an attempt that takes as long as
 * the test says, where a timer in the receiver would take real time.
 */
function heldAnswers() {
  const held: ServerResponse[] = [];
  return {
    hold: (res: ServerResponse) => held.push(res),
    get count() {
      return held.length;
    },
    release(status = 200, body = ''): number {
      const released = held.splice(0);
      for (const res of released) res.writeHead(status).end(body);
      return released.length;
    },
  };
}

/** Waits until the delivery has succeeded on its first attempt, answered 200 with `ok`. */
async function deliveredOnce(webhookId: string, deliveryId: string): Promise<void> {
  await eventually(async () => {
    const { delivery, attempts } = await keyhook.deliveries.get(TENANT, webhookId, deliveryId);
    expect(delivery.status).toBe('succeeded');
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attempt: 1, statusCode: 200, error: null, responseBody: 'ok' });
  });
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
    // Signed at the clock's time (it has not moved).
    expect(Number(match![1])).toBe(Math.floor(clock.now().getTime() / 1000));
    expect(match![2]).toBe(expectedSignature(secret, match![1]!, request!.body));
    await deliveredOnce(webhook.id, published.deliveries[0]!.id);
    // Longer than the whole retry schedule on the clock: no attempt after the 2xx.
    await clock.advance(FAST_SCHEDULE.reduce((a, b) => a + b) + 100);
    expect(receiver.requests).toHaveLength(1);
  });

  it('goes out at once on publish, woken rather than polled', async () => {
    setUp();
    await worker.stop();
    worker = keyhook.createWorker({ pollIntervalMs: 60_000 });
    worker.start();
    await clock.settle(); // the worker is idle in its (minute-long) poll
    await webhookTo('/ok');
    await publish();
    // The clock stands still, so no poll comes due: only the publish can have sent it.
    await receiver.waitFor((r) => r.length === 1, 2000);
  });

  it('retries on the configured schedule, 7 attempts in all, with the same id and bytes, then fails', async () => {
    setUp();
    receiver.on('/down', answer(500, 'nope'));
    const { webhook } = await webhookTo('/down');
    const published = await publish();
    const detail = () => keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
    for (let attempt = 1; ; attempt++) {
      await receiver.waitFor((r) => r.length === attempt);
      // Recorded, so its retry is scheduled.
      await eventually(async () => expect((await detail()).attempts).toHaveLength(attempt));
      if (attempt === 7) break;
      // Due the schedule's step after the attempt (the clock has not moved since), ±10 % jitter.
      const { delivery } = await detail();
      expect(delivery.status).toBe('retry_scheduled');
      const wait = delivery.dueAt!.getTime() - clock.now().getTime();
      const step = FAST_SCHEDULE[attempt - 1]!;
      expect(wait).toBeGreaterThanOrEqual(Math.floor(step * 0.9));
      expect(wait).toBeLessThanOrEqual(Math.ceil(step * 1.1));
      // Not sent a millisecond before it is due; sent when it is.
      await clock.advance(wait - 1);
      expect((await detail()).delivery.status).toBe('retry_scheduled');
      expect(receiver.requests).toHaveLength(attempt);
      await clock.advance(1);
    }
    const { delivery, attempts } = await detail();
    expect(delivery.status).toBe('failed');
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(attempts.every((a) => a.statusCode === 500 && a.responseBody === 'nope')).toBe(true);
    const sent = receiver.to('/down');
    expect(new Set(sent.map((r) => r.body))).toEqual(new Set([published.event.payload]));
    expect(new Set(sent.map((r) => r.headers[EVENT_ID_HEADER]))).toEqual(new Set([published.event.id]));
    // On the clock, each retry started within the jitter (±10 %) of the schedule's step.
    for (let i = 1; i < attempts.length; i++) {
      const gap = attempts[i]!.startedAt.getTime() - attempts[i - 1]!.startedAt.getTime();
      expect(gap).toBeGreaterThanOrEqual(Math.floor(FAST_SCHEDULE[i - 1]! * 0.9));
      expect(gap).toBeLessThanOrEqual(Math.ceil(FAST_SCHEDULE[i - 1]! * 1.1));
    }
    await clock.advance(400);
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
    const busy = await webhookTo('/busy', ['run.completed', 'run.failed']);
    const err = await webhookTo('/err', ['apply.failed', 'run.completed']);
    const published = await publish();
    const detailOf = ({ webhook }: { webhook: { id: string } }) => {
      const delivery = published.deliveries.find((d) => d.webhookId === webhook.id)!;
      return keyhook.deliveries.get(TENANT, webhook.id, delivery.id);
    };
    const answeredAt = clock.now().getTime();
    await receiver.waitFor((r) => r.length === 3);
    await eventually(async () => {
      for (const webhook of [gone, busy, err]) expect((await detailOf(webhook)).attempts).toHaveLength(1);
    });
    // The 500's retry keeps the schedule (40 ms ± 10 %).
    await clock.advance(Math.ceil(FAST_SCHEDULE[0]! * 1.1));
    await receiver.waitFor((r) => r.filter((x) => x.path === '/err').length === 2, 5000);
    // The 503's waits for its Retry-After: not a millisecond before 1 s.
    await clock.advance(answeredAt + 999 - clock.now().getTime());
    expect((await detailOf(busy)).delivery.status).toBe('retry_scheduled');
    expect(receiver.to('/busy')).toHaveLength(1);
    // The worker times only its earliest retry (the 500's): this one goes out by the next poll.
    await clock.advance(50);
    await receiver.waitFor((r) => r.filter((x) => x.path === '/busy').length === 2, 5000);
    await eventually(async () => expect((await detailOf(busy)).attempts).toHaveLength(2));
    await eventually(async () => expect((await detailOf(err)).attempts).toHaveLength(2));
    const gap = async (webhook: { webhook: { id: string } }) => {
      const [first, second] = (await detailOf(webhook)).attempts;
      return second!.startedAt.getTime() - first!.startedAt.getTime();
    };
    expect(await gap(busy)).toBeGreaterThanOrEqual(1000);
    expect(await gap(err)).toBeLessThan(900);
    const detail = await detailOf(gone);
    expect(detail.delivery.status).toBe('failed');
    expect(receiver.to('/gone')).toHaveLength(1);
  });

  it('five permanent failures disable the endpoint (callback fires); then nothing is sent until re-enabled', async () => {
    // No retries: each failed attempt fails its delivery for good.
    setUp({ retrySchedule: [] });
    let up = false;
    receiver.on('/flaky', (_r, _i, res) => res.writeHead(up ? 200 : 500).end());
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
    await clock.advance(300);
    expect(receiver.requests).toHaveLength(before);
    expect((await keyhook.deliveries.get(TENANT, webhook.id, held.deliveries[0]!.id)).delivery.status).toBe(
      'held',
    );
    up = true;
    await keyhook.webhooks.update(TENANT, webhook.id, { status: 'active' });
    await receiver.waitFor((r) => r.length === before + 1, 2000);
    expect(receiver.requests.at(-1)!.headers[EVENT_ID_HEADER]).toBe(held.event.id);
  });

  it('a 410 Gone disables the endpoint at once, with the reason gone: not retried, the rest held', async () => {
    setUp();
    receiver.on('/gone', answer(410));
    const { webhook } = await webhookTo('/gone');
    const first = await publish({ n: 1 });
    await eventually(async () => {
      expect((await keyhook.webhooks.get(TENANT, webhook.id)).disabledReason).toBe('gone');
    });
    expect(disabled).toEqual([
      expect.objectContaining({ id: webhook.id, status: 'disabled', disabledReason: 'gone' }),
    ]);
    expect(logs.some((l) => l.level === 'warn' && l.message.includes('410 Gone'))).toBe(true);
    const detail = await keyhook.deliveries.get(TENANT, webhook.id, first.deliveries[0]!.id);
    expect([detail.delivery.status, detail.attempts.map((a) => a.statusCode)]).toEqual(['failed', [410]]);
    // Nothing more goes out: not this delivery again, not the next event's.
    const next = await publish({ n: 2 });
    expect(next.deliveries[0]!.status).toBe('held');
    await clock.advance(Math.ceil(FAST_SCHEDULE.reduce((a, b) => a + b) * 1.1) + 300);
    expect(receiver.requests).toHaveLength(1);
  });

  it('a success resets the count: four failures, a success, four failures leave the endpoint active', async () => {
    setUp({ retrySchedule: [] });
    const plan = [500, 500, 500, 500, 200, 500, 500, 500, 500];
    receiver.on('/mixed', (_r, index, res) => res.writeHead(plan[index] ?? 200).end());
    const { webhook } = await webhookTo('/mixed');
    const deliveryIds: string[] = [];
    for (let i = 0; i < plan.length; i++) {
      deliveryIds.push((await publish({ n: i })).deliveries[0]!.id);
      await receiver.waitFor((r) => r.length === i + 1);
    }
    // Every attempt recorded: the count the last one left stands.
    await eventually(async () => {
      for (const id of deliveryIds) {
        expect((await keyhook.deliveries.get(TENANT, webhook.id, id)).attempts).toHaveLength(1);
      }
    });
    expect((await keyhook.webhooks.get(TENANT, webhook.id)).status).toBe('active');
    expect(disabled).toEqual([]);
  });

  it('PATCH disabled by hand pauses deliveries; PATCH active sends them at once', async () => {
    setUp();
    const { webhook } = await webhookTo('/ok');
    await keyhook.webhooks.update(TENANT, webhook.id, { status: 'disabled' });
    const published = await publish();
    expect(published.deliveries[0]!.status).toBe('held');
    await clock.advance(300);
    expect(receiver.requests).toHaveLength(0);
    expect(
      (await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id)).delivery.status,
    ).toBe('held');
    await keyhook.webhooks.update(TENANT, webhook.id, { status: 'active' });
    await receiver.waitFor((r) => r.length === 1, 1000);
  });

  it('after a secret rotation the next attempt is signed with the new secret only', async () => {
    setUp();
    receiver.on('/rot', (_r, index, res) => res.writeHead(index === 0 ? 500 : 200).end());
    const { webhook, secret: oldSecret } = await webhookTo('/rot');
    const published = await publish();
    await receiver.waitFor((r) => r.length === 1);
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
      expect(detail.delivery.status).toBe('retry_scheduled');
    });
    // Rotated before the retry is due; the retry then goes out.
    const { secret: newSecret } = await keyhook.webhooks.rotate(TENANT, webhook.id);
    await clock.advance(Math.ceil(FAST_SCHEDULE[0]! * 1.1));
    await receiver.waitFor((r) => r.length === 2);
    const [first, second] = receiver.to('/rot');
    const parse = (header: unknown) => /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(header))!;
    const [, t1, v1] = parse(first!.headers[SIGNATURE_HEADER]);
    expect(v1).toBe(expectedSignature(oldSecret, t1!, first!.body));
    const [, t2, v2] = parse(second!.headers[SIGNATURE_HEADER]);
    expect(v2).toBe(expectedSignature(newSecret!, t2!, second!.body));
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
      expect(attempts[0]?.error).toBe('refused: The host did not resolve to a public address.');
    });
    expect(receiver.requests).toHaveLength(0);
  });

  it("tells the tenant only that an internal name's address is not public; the operator's log names it", async () => {
    const internal: Record<string, { address: string; family: 4 | 6 }[]> = {
      'internal-name': [{ address: '10.20.30.40', family: 4 }],
      'metadata-name': [{ address: '::ffff:169.254.169.254', family: 6 }],
    };
    const lookup = async (hostname: string) => {
      const found = internal[hostname];
      if (found) return found;
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    };
    setUp({ lookup }, { mode: 'production', webhookUrlPolicy: { allowHttp: true } });
    const port = new URL(receiver.url('/')).port;
    const hosts = ['internal-name', 'metadata-name', 'absent-name'];
    const webhooks = await Promise.all(
      hosts.map((host) =>
        keyhook.webhooks.create(TENANT, { url: `http://${host}:${port}/hook`, events: ['run.completed'] }),
      ),
    );
    const published = await publish();
    const errors: (string | null)[] = [];
    await eventually(async () => {
      errors.length = 0;
      for (const [i, { webhook }] of webhooks.entries()) {
        const delivery = published.deliveries.find((d) => d.webhookId === webhook.id)!;
        const { attempts } = await keyhook.deliveries.get(TENANT, webhook.id, delivery.id);
        expect(attempts[0], hosts[i]).toBeDefined();
        errors.push(attempts[0]!.error);
      }
    });
    // One answer for an internal address and for a name that does not resolve: no map of names.
    for (const error of errors) expect(error).toBe('refused: The host did not resolve to a public address.');
    const refusals = logs.filter((line) => line.message.includes('refused at connect time'));
    expect(refusals.every((line) => line.level === 'warn')).toBe(true);
    const reasons = refusals.map((line) => (line.context as { reason: string }).reason).sort();
    expect(reasons).toEqual([
      'The host absent-name could not be resolved (ENOTFOUND).',
      'The host internal-name resolves to a non-public address (10.20.30.40).',
      'The host metadata-name resolves to a non-public address (::ffff:169.254.169.254).',
    ]);
    expect(refusals[0]!.context).toMatchObject({ tenantId: TENANT });
    expect(receiver.requests).toHaveLength(0);
  });

  it('stop() lets the attempt in flight finish and record before it resolves', async () => {
    setUp();
    const answers = heldAnswers();
    receiver.on('/slowish', (_r, _i, res) => answers.hold(res));
    const { webhook } = await webhookTo('/slowish');
    const published = await publish();
    // The attempt is in flight: the receiver has it and holds its answer.
    await receiver.waitFor((r) => r.length === 1);
    let stopped = false;
    const stopping = worker.stop().then(() => {
      stopped = true;
    });
    await clock.advance(100);
    expect(stopped).toBe(false);
    answers.release(200, 'late');
    await stopping;
    const { delivery, attempts } = await keyhook.deliveries.get(
      TENANT,
      webhook.id,
      published.deliveries[0]!.id,
    );
    expect(delivery.status).toBe('succeeded');
    expect(attempts[0]!.responseBody).toBe('late');
  });

  it('a worker stopped and started again delivers: stop() closed its connections, and the next send opens new ones', async () => {
    setUp();
    const { webhook } = await webhookTo('/ok');
    const before = await publish({ runId: 'run_1' });
    await receiver.waitFor((r) => r.length === 1);
    await worker.stop();
    worker.start();
    const after = await publish({ runId: 'run_2' });
    await receiver.waitFor((r) => r.length === 2);
    for (const published of [before, after]) await deliveredOnce(webhook.id, published.deliveries[0]!.id);
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
    await eventually(() => expect(waiting).toBe(most));
    // Polls come due, and nothing more is sent.
    await clock.advance(300);
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
    await clock.advance(100);
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
    const tries: number[] = [];
    store.leaseDeliveries = async (request) => {
      tries.push(clock.now().getTime());
      if (failing) throw new KeyhookError('unavailable', 'The store is unreachable.');
      return lease(request);
    };
    await webhookTo('/ok');
    await publish();
    worker = keyhook.createWorker({ pollIntervalMs: 50 });
    const started = clock.now().getTime();
    worker.start();
    await clock.advance(400);
    expect(receiver.requests).toHaveLength(0);
    // At once, then after 100 ms and 250 ms more: backing off, not polling every 50 ms.
    expect(tries.map((at) => at - started)).toEqual([0, 100, 350]);
    expect(logs.filter((l) => l.message.includes('could not lease deliveries'))).toHaveLength(1);
    failing = false;
    // The next try comes 500 ms after the last, and reaches the store.
    await clock.advance(450);
    expect(tries.map((at) => at - started)).toEqual([0, 100, 350, 850]);
    await receiver.waitFor((r) => r.length === 1);
    await eventually(() =>
      expect(logs.some((l) => l.message.includes('reached the store again'))).toBe(true),
    );
  });

  it('records an attempt the store refused on the next try, after a backoff on the clock', async () => {
    setUp();
    const complete = store.completeAttempt.bind(store);
    let tries = 0;
    store.completeAttempt = async (completion) => {
      if (++tries === 1) throw new KeyhookError('unavailable', 'The store is unreachable.');
      return complete(completion);
    };
    const { webhook } = await webhookTo('/ok');
    const published = await publish();
    const status = async () =>
      (await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id)).delivery.status;
    await receiver.waitFor((r) => r.length === 1);
    await eventually(() => expect(tries).toBe(1));
    expect(logs.filter((l) => l.message.includes('could not record an attempt'))).toHaveLength(1);
    // The first backoff is 100 ms: not a millisecond before.
    await clock.advance(99);
    expect(tries).toBe(1);
    expect(await status()).toBe('in_flight');
    await clock.advance(1);
    expect(tries).toBe(2);
    expect(await status()).toBe('succeeded');
    expect(receiver.requests).toHaveLength(1);
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

  it('publish() answers before its handed-over attempt starts: the request goes out in a later turn', async () => {
    setUp();
    await webhookTo('/ok');
    // Every request the worker's sender makes goes through undici's Agent.
    const requests = vi.spyOn(Agent.prototype, 'request');
    try {
      const published = await publish();
      expect(published.deliveries[0]!.status).toBe('in_flight');
      expect(requests).not.toHaveBeenCalled();
      await receiver.waitFor((r) => r.length === 1);
      expect(requests).toHaveBeenCalledTimes(1);
    } finally {
      requests.mockRestore();
    }
  });

  it("handoffs and leases share the worker's room: never more attempts at once than its concurrency", async () => {
    setUp();
    await worker.stop();
    worker = keyhook.createWorker({ pollIntervalMs: 50, concurrency: 2 });
    worker.start();
    const leasedByQuery = watchLeases();
    // The receiver holds its answers until the test lets them go, so attempts overlap.
    const answers = heldAnswers();
    let most = 0;
    receiver.on('/slow', (_r, _i, res) => {
      answers.hold(res);
      most = Math.max(most, answers.count);
    });
    await webhookTo('/slow');
    const published = await Promise.all(Array.from({ length: 10 }, (_, i) => publish({ i })));
    // Two were handed over to run at once and two more to wait beside them; the rest were
    // written pending for the lease.
    expect(published.map((p) => p.deliveries[0]!.status).sort()).toEqual([
      ...Array(4).fill('in_flight'),
      ...Array(6).fill('pending'),
    ]);
    // Two at a time: both slots busy, time passes, nothing more goes out until they are answered.
    for (let answered = 0; answered < 10; ) {
      const sent = Math.min(10, answered + 2);
      await receiver.waitFor((r) => r.length === sent, 5000);
      await clock.advance(50);
      expect(receiver.requests).toHaveLength(sent);
      answered += answers.release();
    }
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
    // The first answer comes when the test lets it go; the second at once.
    const firstAnswer = heldAnswers();
    receiver.on('/slow', (_r, index, res) =>
      index === 0 ? firstAnswer.hold(res) : res.writeHead(200).end(),
    );
    const { webhook } = await webhookTo('/slow');
    const started = clock.now().getTime();
    const [first, second] = await Promise.all([publish({ n: 1 }), publish({ n: 2 })]);
    expect([first!.deliveries[0]!.status, second!.deliveries[0]!.status]).toEqual(['in_flight', 'in_flight']);
    const detailOf = (published: typeof first) =>
      keyhook.deliveries.get(TENANT, webhook.id, published!.deliveries[0]!.id);
    // The first attempt takes 300 ms on the clock.
    await receiver.waitFor((r) => r.length === 1, 5000);
    await clock.advance(300);
    firstAnswer.release();
    await eventually(async () => expect((await detailOf(first)).delivery.status).toBe('succeeded'));
    // The second waited 300 ms behind the first: too late to start under its lease, so it goes
    // out only once that lease ran out, leased again; not a millisecond before.
    await clock.advance(299);
    expect(receiver.requests).toHaveLength(1);
    expect((await detailOf(second)).attempts).toHaveLength(0);
    await clock.advance(21); // past the lease's end by a poll
    await receiver.waitFor((r) => r.length === 2, 5000);
    await eventually(async () => expect((await detailOf(second)).delivery.status).toBe('succeeded'));
    const [attempt] = (await detailOf(second)).attempts;
    expect(attempt!.startedAt.getTime() - started).toBeGreaterThanOrEqual(600);
    // And once only.
    await clock.advance(100);
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
    let reachedStore!: () => void;
    const atTheStore = new Promise<void>((resolve) => {
      reachedStore = resolve;
    });
    store.publishEvent = async (...args) => {
      reachedStore();
      await gate;
      return write(...args);
    };
    const publishing = publish();
    await atTheStore; // the publish has reserved its slot and waits on the store
    let stopped = false;
    const stopping = worker.stop().then(() => {
      stopped = true;
    });
    await clock.advance(50);
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
    await clock.advance(200);
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

describe('the injected timers', () => {
  it('set the poll, a retry and the purge rounds; only the poll keeps the process alive (no unref)', async () => {
    const sets: { kind: 'timeout' | 'interval'; ms: number; unref: boolean }[] = [];
    // The test's virtual clock (set up below), recording how each timer was set.
    const recording: Timers = {
      setTimeout: (callback, ms, options) => {
        sets.push({ kind: 'timeout', ms, unref: options?.unref === true });
        return clock.setTimeout(callback, ms);
      },
      setInterval: (callback, ms, options) => {
        sets.push({ kind: 'interval', ms, unref: options?.unref === true });
        return clock.setInterval(callback, ms);
      },
      clearTimeout: (handle) => clock.clearTimeout(handle),
      clearInterval: (handle) => clock.clearInterval(handle),
    };
    setUp({}, { timers: recording });
    await clock.settle();
    // The purge's rounds (a minute apart for the default 30 days), then the poll.
    expect(sets).toEqual([
      { kind: 'interval', ms: 60_000, unref: true },
      { kind: 'timeout', ms: 50, unref: false },
    ]);
    receiver.on('/down', answer(500));
    const { webhook } = await webhookTo('/down');
    const published = await publish();
    await receiver.waitFor((r) => r.length === 1);
    await eventually(async () => {
      const detail = await keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
      expect(detail.delivery.status).toBe('retry_scheduled');
    });
    await clock.settle();
    // The retry's timer, unref'd: FAST_SCHEDULE[0] ± 10 % away.
    const retries = sets.filter((set) => set.kind === 'timeout' && set.unref);
    expect(retries).toHaveLength(1);
    expect(retries[0]!.ms).toBeGreaterThanOrEqual(Math.floor(FAST_SCHEDULE[0]! * 0.9));
    expect(retries[0]!.ms).toBeLessThanOrEqual(Math.ceil(FAST_SCHEDULE[0]! * 1.1));
  });
});

describe('held deliveries (delivery.heldRetentionMs)', () => {
  it("fail once held longer than the retention, through the worker's periodic expiry; never sent", async () => {
    // Longer than the expiry's interval, so the check at one interval finds it not yet due.
    const heldRetentionMs = HELD_EXPIRY_INTERVAL_MS + 30_000;
    setUp({ heldRetentionMs });
    await worker.stop();
    const expire = store.expireHeldDeliveries.bind(store);
    const checks: number[] = [];
    store.expireHeldDeliveries = async (heldBefore, at) => {
      checks.push(at.getTime());
      return expire(heldBefore, at);
    };
    // A poll a second: the expiry runs in the worker's loop, after a lease.
    worker = keyhook.createWorker({ pollIntervalMs: 1000 });
    const started = clock.now().getTime();
    worker.start();
    const { webhook } = await webhookTo('/paused');
    await keyhook.webhooks.update(TENANT, webhook.id, { status: 'disabled' });
    const published = await publish();
    expect(published.deliveries[0]!.status).toBe('held');
    const detail = () => keyhook.deliveries.get(TENANT, webhook.id, published.deliveries[0]!.id);
    // Checked at the start and an interval later; the retention has not passed then.
    await clock.advance(HELD_EXPIRY_INTERVAL_MS);
    expect(checks.map((at) => at - started)).toEqual([0, HELD_EXPIRY_INTERVAL_MS]);
    expect((await detail()).delivery.status).toBe('held');
    // The next check, past the retention, fails it.
    await clock.advance(HELD_EXPIRY_INTERVAL_MS);
    expect(checks.map((at) => at - started)).toEqual([
      0,
      HELD_EXPIRY_INTERVAL_MS,
      2 * HELD_EXPIRY_INTERVAL_MS,
    ]);
    const { delivery, attempts } = await detail();
    expect(delivery.status).toBe('failed');
    expect(attempts).toEqual([]);
    expect(receiver.requests).toHaveLength(0);
  });
});

describe('retention (delivery.retentionMs)', () => {
  it('deletes a finished delivery, its attempts and its event once the retention passed; a held one stays', async () => {
    // The purge runs on the clock's timers: a round every 100 ms for this retention.
    setUp({ retentionMs: 1000 });
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
    // Rounds run, but the retention has not passed: nothing goes.
    await clock.advance(350);
    expect((await keyhook.deliveries.get(TENANT, webhook.id, sent.id)).attempts).toHaveLength(1);
    // A round after it passed deletes it.
    await clock.advance(1000);
    await expect(keyhook.deliveries.get(TENANT, webhook.id, sent.id)).rejects.toMatchObject({
      code: 'not_found',
    });
    const stillHeld = await keyhook.deliveries.get(TENANT, paused.webhook.id, held.id);
    expect(stillHeld.delivery.status).toBe('held');
    // The event stays while its held delivery refers to it: the id is still taken.
    expect((await publish({ runId: 'run_old' }, 'evt_retention_1')).replayed).toBe(true);
  });

  it('refuses a retention under a second, or not whole milliseconds', () => {
    for (const retentionMs of [999, 0, -1, 1500.5, Number.NaN])
      expect(() =>
        createKeyhook({
          ...TEST_CATALOG,
          store: new MemoryStore(),
          adminSession: { secret: TEST_ADMIN_SECRET },
          encryptionKey: TEST_ENCRYPTION_KEY,
          delivery: { retentionMs },
        }),
      ).toThrow(/retentionMs must be whole milliseconds, at least 1000/);
  });
});
