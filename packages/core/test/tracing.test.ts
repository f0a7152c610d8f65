import { createKeyhook, type Keyhook, type KeyhookOptions, MemoryStore, silentLogger } from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_CATALOG, TestReceiver } from '@keyhook/testing/support';
import { context, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formatTraceparent, parseTraceparent } from '../src/tracing.js';
import { RETRY_DUE_MS, RETRY_MS, startedKeyhook } from './worker-harness.js';

const TENANT = 'tenant_a';

/**
 * A span per delivery attempt, linked to the span that was active where the event was published,
 * read back with the SDK's in-memory exporter; and the opt-in `traceparent` header.
 */
describe('traces (OpenTelemetry)', () => {
  let receiver: TestReceiver;
  let exporter: InMemorySpanExporter;
  let provider: BasicTracerProvider;
  const opened: Keyhook[] = [];

  beforeAll(() => {
    // What a host's SDK setup registers: without it there is no active span to find at publish.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  afterAll(() => context.disable());

  beforeEach(async () => {
    receiver = await TestReceiver.start();
    exporter = new InMemorySpanExporter();
    provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  });

  afterEach(async () => {
    for (const keyhook of opened.splice(0)) await keyhook.close();
    await receiver.close();
    await provider.shutdown();
  });

  /** A keyhook with its worker started, on a virtual clock; closed after the test. */
  function started(telemetry: KeyhookOptions['telemetry']) {
    const { keyhook, clock } = startedKeyhook({
      delivery: { retrySchedule: [RETRY_MS], timeoutMs: 1_000 },
      telemetry,
    });
    opened.push(keyhook);
    return { keyhook, clock };
  }
  const traced = (traceparent?: boolean) => started({ tracerProvider: provider, traceparent });

  /** Publishes inside a span of the host's, as a request handler would; returns that span. */
  async function publishInSpan(keyhook: Keyhook, type: 'run.completed' | 'run.failed') {
    const tracer = provider.getTracer('host-app');
    return tracer.startActiveSpan('POST /runs', async (span: Span) => {
      const published = await keyhook.events.publish({ tenantId: TENANT, type, data: {} });
      span.end();
      return { span, event: published.event };
    });
  }

  const attemptSpans = () => exporter.getFinishedSpans().filter((span) => span.kind === SpanKind.CLIENT);

  it('makes an HTTP client span per attempt, in a trace of its own, linked to the publishing span', async () => {
    let flaky = 0;
    receiver.on('/ok', (_request, _index, res) => res.writeHead(200).end());
    receiver.on('/flaky', (_request, _index, res) => res.writeHead(flaky++ === 0 ? 500 : 200).end());
    const { keyhook, clock } = traced();
    const ok = await keyhook.webhooks.create(TENANT, {
      // A secret of the receiver's own in the path and the query, as Slack's and Discord's carry.
      url: receiver.url('/ok/T0001/B0002/receivers-secret?token=receivers-own'),
      events: ['run.completed'],
    });
    const flakyHook = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/flaky'),
      events: ['run.failed'],
    });
    const first = await publishInSpan(keyhook, 'run.completed');
    const second = await publishInSpan(keyhook, 'run.failed');
    // Both first attempts go out at publish; the retry only once the clock makes it due, after
    // the store has recorded the failure (polled: real I/O, not a timer).
    await receiver.waitFor((requests) => requests.length === 2);
    await expect
      .poll(async () => {
        const [delivery] = await keyhook.deliveries.list(TENANT, flakyHook.webhook.id, 1, undefined, null);
        return delivery?.status;
      })
      .toBe('retry_scheduled');
    await clock.advance(RETRY_DUE_MS);
    await receiver.waitFor((requests) => requests.length === 3);
    // The retry's span ends once its answer is read (real I/O).
    await expect.poll(() => attemptSpans().length).toBe(3);

    const publishing = first.span.spanContext();
    expect(first.event.traceContext).toBe(formatTraceparent(publishing));
    const okSpan = attemptSpans().find((span) => span.attributes['keyhook.event.id'] === first.event.id)!;
    expect(okSpan.name).toBe('POST');
    // Linked to the publish, not its child: the attempt may run hours later, elsewhere.
    expect(okSpan.links.map((link) => link.context)).toEqual([
      expect.objectContaining({ traceId: publishing.traceId, spanId: publishing.spanId }),
    ]);
    expect(okSpan.spanContext().traceId).not.toBe(publishing.traceId);
    expect(okSpan.parentSpanContext).toBeUndefined();
    const { port } = new URL(receiver.url('/'));
    expect(okSpan.attributes).toEqual({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'server.port': Number(port),
      'url.scheme': 'http',
      'http.response.status_code': 200,
      'keyhook.tenant.id': TENANT,
      'keyhook.webhook.id': ok.webhook.id,
      'keyhook.delivery.id': expect.stringMatching(/^dlv_/),
      'keyhook.delivery.attempt': 1,
      'keyhook.delivery.outcome': 'succeeded',
      'keyhook.event.id': first.event.id,
      'keyhook.event.type': 'run.completed',
    });
    expect(JSON.stringify(okSpan.attributes)).not.toMatch(/T0001|receivers-(secret|own)/);
    expect(okSpan.status.code).toBe(SpanStatusCode.UNSET);

    const retried = attemptSpans()
      .filter((span) => span.attributes['keyhook.event.id'] === second.event.id)
      .sort(
        (a, b) =>
          Number(a.attributes['keyhook.delivery.attempt']) - Number(b.attributes['keyhook.delivery.attempt']),
      );
    expect(retried.map((span) => span.attributes)).toEqual([
      expect.objectContaining({
        'keyhook.webhook.id': flakyHook.webhook.id,
        'http.response.status_code': 500,
        'error.type': '500',
        'keyhook.delivery.outcome': 'retry',
      }),
      expect.objectContaining({
        'http.response.status_code': 200,
        'http.request.resend_count': 1,
        'keyhook.delivery.attempt': 2,
        'keyhook.delivery.outcome': 'succeeded',
      }),
    ]);
    expect(retried[0]!.status.code).toBe(SpanStatusCode.ERROR);
    // Both attempts link to the one publish.
    const linked = (span: ReadableSpan) => span.links[0]?.context.spanId;
    expect(retried.map(linked)).toEqual([second.span.spanContext().spanId, second.span.spanContext().spanId]);
    // No traceparent unless the host asks for it.
    expect(receiver.requests.every((request) => request.headers['traceparent'] === undefined)).toBe(true);
  });

  it('an attempt that gets no answer is an error span; an event published outside any span has no link', async () => {
    const { keyhook } = traced();
    const closed = await TestReceiver.start();
    const url = closed.url('/nobody');
    await closed.close();
    await keyhook.webhooks.create(TENANT, { url, events: ['run.completed'] });
    const { event } = await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: {} });
    expect(event.traceContext).toBeNull();
    // The attempt goes out at publish and is refused (real I/O); its retry is not due while the
    // clock stands still, so this is the only span.
    await expect.poll(() => attemptSpans().length).toBe(1);
    const [span] = attemptSpans();
    expect(span!.links).toEqual([]);
    expect(span!.attributes).toMatchObject({
      'error.type': 'connection',
      'keyhook.delivery.outcome': 'retry',
    });
    expect(span!.attributes['http.response.status_code']).toBeUndefined();
    expect(span!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: expect.any(String) });
  });

  it("ends each span with the outcome the store recorded: a retry of an endpoint disabled meanwhile is 'held'", async () => {
    let answer: (() => void) | undefined;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    // The receiver holds its 500 until the endpoint is disabled.
    receiver.on('/gated', (_request, _index, res) => {
      void answered.then(() => res.writeHead(500).end());
    });
    const { keyhook } = traced();
    const { webhook } = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/gated'),
      events: ['run.completed'],
    });
    await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: {} });
    await receiver.waitFor((requests) => requests.length === 1);
    await keyhook.webhooks.update(TENANT, webhook.id, { status: 'disabled' });
    answer!();
    // The store records the answer just sent.
    await expect.poll(() => attemptSpans().length).toBe(1);
    expect(attemptSpans()[0]!.attributes).toMatchObject({
      'http.response.status_code': 500,
      'keyhook.delivery.outcome': 'held',
    });
  });

  it('with telemetry.traceparent, each delivery carries its attempt span as the W3C traceparent', async () => {
    receiver.on('/ok', (_request, _index, res) => res.writeHead(200).end());
    const { keyhook } = traced(true);
    await keyhook.webhooks.create(TENANT, { url: receiver.url('/ok'), events: ['run.completed'] });
    await publishInSpan(keyhook, 'run.completed');
    await receiver.waitFor((requests) => requests.length === 1);
    // Its span ends once the answer is read (real I/O).
    await expect.poll(() => attemptSpans().length).toBe(1);
    const sent = receiver.requests[0]!.headers['traceparent'];
    expect(sent).toBe(formatTraceparent(attemptSpans()[0]!.spanContext()));
    expect(sent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  });

  it('without a tracer provider nothing is recorded, and traceparent falls back to the publishing span', async () => {
    receiver.on('/ok', (_request, _index, res) => res.writeHead(200).end());
    const { keyhook } = started({ traceparent: true });
    await keyhook.webhooks.create(TENANT, { url: receiver.url('/ok'), events: ['run.completed'] });
    // The host's span comes from its own provider; keyhook's global one is the no-op.
    const { span } = await publishInSpan(keyhook, 'run.completed');
    await receiver.waitFor((requests) => requests.length === 1);
    expect(receiver.requests[0]!.headers['traceparent']).toBe(formatTraceparent(span.spanContext()));
    expect(attemptSpans()).toEqual([]);
    expect(trace.getTracerProvider()).not.toBe(provider);
  });

  it('reads back only well-formed traceparent values, and keeps the header name to itself', () => {
    const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(formatTraceparent(parseTraceparent(valid)!)).toBe(valid);
    for (const bad of [
      null,
      '',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // an unknown version
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01', // the all-zero trace id
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', // the all-zero span id
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', // uppercase
    ]) {
      expect(parseTraceparent(bad)).toBeUndefined();
    }
    expect(() =>
      createKeyhook({
        ...TEST_CATALOG,
        store: new MemoryStore(),
        adminSession: { secret: TEST_ADMIN_SECRET },
        logger: silentLogger,
        delivery: { headers: { signature: 'traceparent' } },
      }),
    ).toThrow(/delivery\.headers\.signature/);
  });
});
