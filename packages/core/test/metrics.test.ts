import { type Keyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { TestReceiver, type VirtualClock } from '@keyhook/testing/support';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RETRY_DUE_MS, RETRY_MS, startedKeyhook, testKeyhook } from './worker-harness.js';

const TENANT = 'tenant_a';

/**
 * keyhook's metrics through @opentelemetry/api, read back with the SDK's in-memory exporter after
 * a scripted run: one success, one retry then success, five failures for good that disable an
 * endpoint, verifications that pass and fail, and one rate-limit refusal.
 */
describe('metrics (OpenTelemetry)', () => {
  let receiver: TestReceiver;
  let keyhook: Keyhook;
  let clock: VirtualClock;
  let exporter: InMemoryMetricExporter;
  let reader: PeriodicExportingMetricReader;

  beforeEach(async () => {
    receiver = await TestReceiver.start();
    exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    // Exports only when asked (forceFlush): a long interval.
    reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    const meterProvider = new MeterProvider({ readers: [reader] });
    ({ keyhook, clock } = startedKeyhook({
      delivery: { retrySchedule: [RETRY_MS], timeoutMs: 1_000 },
      rateLimit: { default: { limit: 2, window: 3600 } },
      telemetry: { meterProvider },
    }));
  });

  afterEach(async () => {
    await keyhook.close();
    await receiver.close();
    await reader.shutdown();
  });

  /** Every data point of the named instrument, as [attributes, value] (a histogram's count). */
  const points = async (name: string) => {
    exporter.reset();
    await reader.forceFlush();
    const found = exporter
      .getMetrics()
      .flatMap((resource) => resource.scopeMetrics)
      .flatMap((scope) => scope.metrics)
      .find((metric) => metric.descriptor.name === name);
    return (found?.dataPoints ?? []).map((point) => [
      point.attributes,
      typeof point.value === 'number' ? point.value : (point.value as { count: number }).count,
    ]);
  };

  it('counts deliveries by outcome, attempts, lag, disabled endpoints, verifications and refusals', async () => {
    let flaky = 0;
    receiver.on('/ok', (_request, _index, res) => res.writeHead(200).end());
    receiver.on('/flaky', (_request, _index, res) => res.writeHead(flaky++ === 0 ? 500 : 200).end());
    receiver.on('/gone', (_request, _index, res) => res.writeHead(410).end());
    await keyhook.webhooks.create(TENANT, { url: receiver.url('/ok'), events: ['run.completed'] });
    await keyhook.webhooks.create(TENANT, { url: receiver.url('/flaky'), events: ['run.failed'] });
    const gone = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/gone'),
      events: ['generation.published'],
    });
    await keyhook.events.publish({ tenantId: TENANT, type: 'run.completed', data: {} });
    const failed = await keyhook.events.publish({ tenantId: TENANT, type: 'run.failed', data: {} });
    for (let n = 0; n < 5; n++) {
      await keyhook.events.publish({ tenantId: TENANT, type: 'generation.published', data: { n } });
    }
    // Every first attempt goes out at publish; the clock has not moved.
    await receiver.waitFor((requests) => requests.length === 7);
    // Polled until the store has recorded what was just sent (real I/O, not a timer).
    await expect
      .poll(async () => (await keyhook.webhooks.get(TENANT, gone.webhook.id)).status)
      .toBe('disabled');
    const flakyDelivery = failed.deliveries[0]!;
    await expect
      .poll(
        async () =>
          (await keyhook.deliveries.get(TENANT, flakyDelivery.webhookId, flakyDelivery.id)).delivery.status,
      )
      .toBe('retry_scheduled');
    // The retry comes due on the clock.
    await clock.advance(RETRY_DUE_MS);
    await receiver.waitFor((requests) => requests.filter((r) => r.path === '/flaky').length === 2);

    // Polled until the retry's answer is recorded (real I/O).
    await expect
      .poll(() => points('keyhook.deliveries'))
      .toEqual(
        expect.arrayContaining([
          [{ 'keyhook.delivery.outcome': 'succeeded' }, 2],
          [{ 'keyhook.delivery.outcome': 'retry' }, 1],
          [{ 'keyhook.delivery.outcome': 'failed' }, 5],
        ]),
      );
    const attempts = await points('http.client.request.duration');
    expect(attempts.reduce((sum, [, count]) => sum + (count as number), 0)).toBe(8);
    expect(attempts).toContainEqual([{ 'http.request.method': 'POST', 'http.response.status_code': 410 }, 5]);
    expect(await points('keyhook.delivery.lag')).toEqual([[{}, 2]]);
    expect(await points('keyhook.endpoints.disabled')).toEqual([[{}, 1]]);

    const { secret } = await keyhook.keys.create(TENANT, { name: 'k', scopes: ['items:read'] });
    const headers = { authorization: `Bearer ${secret}` };
    for (let n = 0; n < 3; n++) await keyhook.guard('items:read')(headers);
    await keyhook.guard('items:read')({ authorization: `Bearer ${secret.slice(0, -4)}beef` });
    expect(await points('keyhook.auth.outcomes')).toEqual(
      expect.arrayContaining([
        [{ 'keyhook.auth.outcome': 'ok' }, 2],
        [{ 'keyhook.auth.outcome': 'rate_limited' }, 1],
        [{ 'keyhook.auth.outcome': 'invalid_api_key' }, 1],
      ]),
    );
    expect(await points('keyhook.rate_limit.refusals')).toEqual([
      [{ 'keyhook.rate_limit.reason': 'key' }, 1],
    ]);
  });

  it('reports the queue depth from the store on each collection: due, scheduled, in flight, held', async () => {
    const store = new MemoryStore();
    const warnings: string[] = [];
    const queueReader = new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 3_600_000,
    });
    const { keyhook: idle } = testKeyhook({
      store,
      logger: { ...silentLogger, warn: (_fields, message) => warnings.push(message) },
      telemetry: { meterProvider: new MeterProvider({ readers: [queueReader] }) },
    });
    const queue = async () => {
      const { resourceMetrics, errors } = await queueReader.collect();
      expect(errors).toEqual([]);
      const gauge = resourceMetrics.scopeMetrics
        .flatMap((scope) => scope.metrics)
        .find((metric) => metric.descriptor.name === 'keyhook.deliveries.queued');
      return Object.fromEntries(
        (gauge?.dataPoints ?? []).map((point) => [point.attributes['keyhook.delivery.state'], point.value]),
      );
    };
    // No worker runs: what is published stays queued.
    await idle.webhooks.create(TENANT, { url: receiver.url('/a'), events: ['run.completed'] });
    const off = await idle.webhooks.create(TENANT, { url: receiver.url('/b'), events: ['run.completed'] });
    await idle.webhooks.update(TENANT, off.webhook.id, { status: 'disabled' });
    for (let n = 0; n < 3; n++)
      await idle.events.publish({ tenantId: TENANT, type: 'run.completed', data: { n } });
    expect(await queue()).toEqual({ due: 3, scheduled: 0, in_flight: 0, held: 3 });

    // A store that fails is logged once per run of failures, and never fails the collection
    // (what the gauge shows meanwhile is the SDK's: a cumulative reader keeps the last values).
    await store.close();
    await queue();
    await queue();
    expect(warnings.filter((message) => message.includes('keyhook.deliveries.queued'))).toHaveLength(1);
    await idle.close();
    await queueReader.shutdown();
  });

  it('without a meter provider, nothing is recorded and nothing breaks', async () => {
    const { keyhook: plain } = testKeyhook();
    const { secret } = await plain.keys.create(TENANT, { name: 'k', scopes: ['items:read'] });
    expect((await plain.guard('items:read')({ authorization: `Bearer ${secret}` })).ok).toBe(true);
    await plain.close();
  });
});
