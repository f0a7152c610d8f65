import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminToken, TestReceiver } from '@keyhook/testing/support';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { buildServer } from '../src/server.js';
import { Client } from './client.js';
import { runCompletedData } from './event-data.js';
import { sqliteEnv, tempDir } from './instances.js';
import { ServerProcess } from './server-process.js';

const SCOPES = ['sources:read', 'sources:write', 'runs:execute'];

/** One OTLP/HTTP export as the collector got it: the raw body, byte for byte. */
interface Export {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A real OTLP/HTTP receiver on 127.0.0.1: it records every export and answers 200, as a collector does. */
class OtlpReceiver {
  readonly exports: Export[] = [];
  private readonly server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.exports.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200).end();
    });
  });

  static async start(): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to: the exporters add /v1/metrics and /v1/traces. */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  to(path: string): Export[] {
    return this.exports.filter((e) => e.path === path);
  }

  /** Every JSON export to `path`, parsed. */
  json(path: string): OtlpJson[] {
    return this.to(path).map((e) => JSON.parse(e.body.toString('utf8')) as OtlpJson);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The parts of OTLP's JSON encoding the assertions read (metrics and traces alike). */
interface OtlpJson {
  resourceMetrics?: { resource: { attributes: Attribute[] }; scopeMetrics: { metrics: Metric[] }[] }[];
  resourceSpans?: { resource: { attributes: Attribute[] }; scopeSpans: { spans: Span[] }[] }[];
}
interface Attribute {
  key: string;
  value: { stringValue?: string; intValue?: number | string; doubleValue?: number };
}
interface Metric {
  name: string;
  sum?: { dataPoints: { attributes: Attribute[]; asInt?: number | string; asDouble?: number }[] };
}
interface Span {
  name: string;
  kind: number;
  attributes: Attribute[];
  links?: { traceId: string; spanId: string }[];
}

/** OTLP's SpanKind: the API's, plus one (0 is unspecified). */
const SPAN_KIND_CLIENT = 3;

const attributesOf = (list: Attribute[]): Record<string, unknown> =>
  Object.fromEntries(
    list.map(({ key, value }) => [key, value.stringValue ?? value.intValue ?? value.doubleValue]),
  );

/**
 * A counter's points in the latest export that has it, as `{ <attribute value>: count }`:
 * the exporters send cumulative sums, so the latest holds the totals.
 */
function counts(exports: OtlpJson[], name: string, attribute: string): Record<string, number> | undefined {
  for (const body of exports.toReversed()) {
    const metrics = (body.resourceMetrics ?? []).flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics));
    const metric = metrics.find((m) => m.name === name);
    if (!metric?.sum) continue;
    return Object.fromEntries(
      metric.sum.dataPoints.map((point) => [
        String(attributesOf(point.attributes)[attribute]),
        Number(point.asInt ?? point.asDouble),
      ]),
    );
  }
  return undefined;
}

const spansOf = (exports: OtlpJson[]): Span[] =>
  exports.flatMap((body) => (body.resourceSpans ?? []).flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));

/** The delivery attempts' spans of one event: core's HTTP client span (kind CLIENT), per attempt. */
const deliverySpans = (exports: OtlpJson[], eventId: string): Span[] =>
  spansOf(exports).filter(
    (span) => span.kind === SPAN_KIND_CLIENT && attributesOf(span.attributes)['keyhook.event.id'] === eventId,
  );

const serviceNames = (exports: OtlpJson[]): unknown[] =>
  exports.flatMap((body) =>
    [...(body.resourceMetrics ?? []), ...(body.resourceSpans ?? [])].map(
      (r) => attributesOf(r.resource.attributes)['service.name'],
    ),
  );

/** A port of 127.0.0.1 nothing listens on: a collector that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * One server process exporting to `otlp`, with a key for the data plane and a webhook on
 * `receiver` for run.completed, as in the data-plane tests.
 */
async function launch(otlp: OtlpReceiver, env: Record<string, string>) {
  const temp = tempDir();
  const server = new ServerProcess({
    ...sqliteEnv(temp.dir),
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
    ...env,
  });
  let started: { client: Client; admin: string; secret: string };
  try {
    const client = await Client.forServer(await server.listening());
    const admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
    started = { client, admin, ...(await client.createKey(admin, { name: 'otlp', scopes: SCOPES })) };
  } catch (error) {
    server.child.kill('SIGKILL');
    temp.remove();
    throw error;
  }
  const { client, admin, secret } = started;
  return {
    server,
    client,
    secret,
    /** One data-plane request with the key, and one with a key that is not (401). */
    async authOnceEach() {
      expect((await client.listSources(secret)).status).toBe(200);
      expect((await client.listSources(`${secret.slice(0, -4)}beef`)).status).toBe(401);
    },
    /** A run on a new source publishes run.completed; resolves with its id once `receiver` has it. */
    async deliverOneEvent(receiver: TestReceiver): Promise<string> {
      const hook = await client.request('POST', '/api/v1/admin/webhooks', admin, {
        url: receiver.url('/hook'),
        events: ['run.completed'],
      });
      expect(hook.status).toBe(201);
      const source = await client.request('POST', '/api/v1/sources', secret, { name: 'docs' });
      expect(source.status).toBe(201);
      const run = await client.request('POST', `/api/v1/sources/${source.body.source.id}/runs`, secret);
      expect(run.status).toBe(202);
      await receiver.waitFor((requests) => requests.some((r) => r.path === '/hook'));
      return JSON.parse(receiver.to('/hook')[0]!.body).id as string;
    },
    async stop() {
      const code = await server.stop();
      temp.remove();
      return code;
    },
  };
}

describe('OTLP export from the real process', () => {
  let otlp: OtlpReceiver;
  let receiver: TestReceiver;

  beforeAll(async () => {
    otlp = await OtlpReceiver.start();
    receiver = await TestReceiver.start();
  });
  afterAll(async () => {
    await otlp?.close();
    await receiver?.close();
  });

  describe('OTEL_EXPORTER_OTLP_PROTOCOL=http/json', () => {
    let running: Awaited<ReturnType<typeof launch>>;

    beforeAll(async () => {
      otlp.exports.length = 0;
      receiver.requests.length = 0;
      running = await launch(otlp, {
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_METRIC_EXPORT_INTERVAL: '200',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=otlp-test',
      });
    });
    afterAll(async () => {
      expect(await running?.stop()).toBe(0);
    });

    it('sends keyhook.auth.outcomes with the counts of the requests made, under service.name', async () => {
      await running.authOnceEach();
      await expect
        .poll(() => counts(otlp.json('/v1/metrics'), 'keyhook.auth.outcomes', 'keyhook.auth.outcome'), {
          timeout: 5000,
        })
        .toEqual({ ok: 1, invalid_api_key: 1 });
      const metricsExport = otlp.to('/v1/metrics').at(-1)!;
      expect(metricsExport.headers['content-type']).toBe('application/json');
      const [resource] = otlp.json('/v1/metrics').at(-1)!.resourceMetrics!;
      expect(attributesOf(resource!.resource.attributes)).toMatchObject({
        'service.name': 'keyhook-reference-server',
        'deployment.environment.name': 'otlp-test',
      });
    });

    // Depends on core's delivery-attempt span (kind CLIENT, keyhook.event.id).
    it('sends a CLIENT span for the delivery attempt, naming the published event', async () => {
      const eventId = await running.deliverOneEvent(receiver);
      await expect
        .poll(() => deliverySpans(otlp.json('/v1/traces'), eventId).length, { timeout: 5000 })
        .toBe(1);
      expect(otlp.to('/v1/traces')[0]!.headers['content-type']).toBe('application/json');
      expect(new Set(serviceNames(otlp.json('/v1/traces')))).toEqual(new Set(['keyhook-reference-server']));
    });
  });

  it('http/protobuf by default: protobuf bodies, the metric name in them as raw UTF-8, the headers set', async () => {
    otlp.exports.length = 0;
    const running = await launch(otlp, {
      OTEL_METRIC_EXPORT_INTERVAL: '200',
      OTEL_SERVICE_NAME: 'keyhook-otlp-proto-test',
      // Read by the exporter itself, as every variable but the protocol and the interval is.
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=proto-test',
    });
    try {
      await running.authOnceEach();
      const hasMetric = (e: Export) => e.body.includes(Buffer.from('keyhook.auth.outcomes', 'utf8'));
      await expect.poll(() => otlp.to('/v1/metrics').some(hasMetric), { timeout: 5000 }).toBe(true);
      const sent = otlp.to('/v1/metrics').find(hasMetric)!;
      expect(sent.headers['content-type']).toBe('application/x-protobuf');
      expect(sent.headers['x-collector-token']).toBe('proto-test');
      expect(sent.body.includes(Buffer.from('keyhook-otlp-proto-test', 'utf8'))).toBe(true);
      expect(() => JSON.parse(sent.body.toString('utf8'))).toThrow();
    } finally {
      expect(await running.stop()).toBe(0);
    }
  });

  it('OTEL_EXPORTER_OTLP_PROTOCOL=grpc refuses to start, naming the variable', async () => {
    const temp = tempDir();
    const server = new ServerProcess({
      ...sqliteEnv(temp.dir),
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    try {
      expect(await server.exited).toBe(1);
      expect(server.stderr).toContain('Invalid configuration');
      expect(server.stderr).toMatch(
        /OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf or http\/json.*"grpc"/,
      );
      expect(server.stdout).not.toMatch(/listening on/);
    } finally {
      temp.remove();
    }
  });

  it('a collector that is down costs nothing but log lines: requests, deliveries and the drain go on', async () => {
    receiver.requests.length = 0;
    const running = await launch(otlp, {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_METRIC_EXPORT_INTERVAL: '200',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      // The exporters retry a refused connection until their timeout: keep the test short.
      OTEL_EXPORTER_OTLP_TIMEOUT: '500',
    });
    await running.authOnceEach();
    await running.deliverOneEvent(receiver);
    await expect
      .poll(() => running.server.stdout.match(/OpenTelemetry: [^\n]*export/), { timeout: 5000 })
      .toBeTruthy();
    await running.authOnceEach();
    expect(await running.stop()).toBe(0);
    expect(running.server.stdout).toMatch(/drained: exiting/);
  });

  // In process, so the test can publish inside a span of its own. The exporters read
  // process.env, so it is set for this case and put back after.
  describe('in process: the span active at publish survives an await (the context manager)', () => {
    const temp = tempDir();
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' };
    let server: Awaited<ReturnType<typeof buildServer>>;

    beforeAll(async () => {
      otlp.exports.length = 0;
      receiver.requests.length = 0;
      otel.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.endpoint;
      Object.assign(process.env, otel, { OTEL_BSP_SCHEDULE_DELAY: '3600000' });
      server = await buildServer(loadConfig({ ...sqliteEnv(temp.dir), ...otel }), {
        worker: { pollIntervalMs: 10 },
      });
    });
    afterAll(async () => {
      await server?.close();
      for (const name of [...Object.keys(otel), 'OTEL_BSP_SCHEDULE_DELAY']) delete process.env[name];
      temp.remove();
    });

    // Depends on core's delivery-attempt span, and its link to the span active at publish.
    it('the delivery attempt’s span links to the span that published the event', async () => {
      await server.keyhook.webhooks.create('acme', { url: receiver.url('/hook'), events: ['run.completed'] });
      // A host's own tracer, not the server's: core reads the active span whoever made it.
      const tracer = new BasicTracerProvider().getTracer('host');
      const { publisher, eventId } = await tracer.startActiveSpan('publish run.completed', async (span) => {
        // The await that loses the active span unless a context manager carries it: a turn of the loop.
        await new Promise((resolve) => setImmediate(resolve));
        const published = await server.keyhook.events.publish({
          tenantId: 'acme',
          type: 'run.completed',
          data: runCompletedData({ runId: 'run_in_process' }),
        });
        span.end();
        return { publisher: span.spanContext(), eventId: published.event.id };
      });
      await receiver.waitFor((requests) => requests.some((r) => r.path === '/hook'));
      await server.close();
      const [attempt] = deliverySpans(otlp.json('/v1/traces'), eventId);
      expect(attempt?.links).toEqual([
        expect.objectContaining({ traceId: publisher.traceId, spanId: publisher.spanId }),
      ]);
    });
  });

  describe('shutdown flushes: with exports an hour apart, SIGTERM sends what was recorded', () => {
    let exportedBeforeClose: number;
    let exitCode: number | null;
    let eventId: string;

    beforeAll(async () => {
      otlp.exports.length = 0;
      receiver.requests.length = 0;
      const running = await launch(otlp, {
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_METRIC_EXPORT_INTERVAL: '3600000',
        OTEL_BSP_SCHEDULE_DELAY: '3600000',
      });
      await running.authOnceEach();
      // The signal follows the receiver's answer at once: the attempt is recorded, and its count
      // and span made, during the drain, before the flush.
      eventId = await running.deliverOneEvent(receiver);
      exportedBeforeClose = otlp.exports.length;
      exitCode = await running.stop();
    });

    it('exits 0 having sent nothing before the signal, and the metrics after it', () => {
      expect(exitCode).toBe(0);
      expect(exportedBeforeClose).toBe(0);
      const sent = otlp.json('/v1/metrics');
      expect(counts(sent, 'keyhook.auth.outcomes', 'keyhook.auth.outcome')).toMatchObject({
        ok: expect.any(Number),
        invalid_api_key: 1,
      });
      expect(counts(sent, 'keyhook.deliveries', 'keyhook.delivery.outcome')).toEqual({ succeeded: 1 });
    });

    // Depends on core's delivery-attempt span (kind CLIENT, keyhook.event.id).
    it('the delivery attempt’s span, ended before the signal, is sent by the flush', () => {
      expect(deliverySpans(otlp.json('/v1/traces'), eventId)).toHaveLength(1);
    });
  });
});
