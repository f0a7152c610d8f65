// OpenTelemetry providers for the benchmarks' "metrics on" and "traces on" variants
// (guard-server.mjs, delivery.mjs): the SDK as production sets it up, so every recording pays
// what it pays there, minus an export during the run.
//
// - Metrics: a MeterProvider with one pull reader, as Prometheus's exporter is one. The SDK
//   aggregates every recording (cumulative, the default) and nothing reads them until a scrape;
//   the benchmarks scrape only outside their timed runs, to check what was recorded.
// - Traces: a BasicTracerProvider with a BatchSpanProcessor (its defaults: batches of 512, a
//   queue of 2,048) over an exporter that counts the spans and drops them. Making, ending and
//   batching a span cost what they cost in production; the exporter's encoding and network send
//   are left out, and the spans die young, as they do once sent (an in-memory exporter would keep
//   a run's spans alive for the GC to carry).
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/** A pull reader that only reads when asked, as a Prometheus scrape asks. */
class ScrapeReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

/** A span exporter that counts what it is given and keeps none of it. */
class CountingExporter {
  exported = 0;
  export(spans, done) {
    this.exported += spans.length;
    done({ code: 0 }); // ExportResultCode.SUCCESS, in @opentelemetry/core
  }
  async forceFlush() {}
  async shutdown() {}
}

/**
 * `options` goes to createKeyhook's `telemetry`. `counted(name)` scrapes once and sums a
 * counter's data points; `spans()` flushes the batch processor and counts the spans exported.
 */
export function benchTelemetry({ traces = false } = {}) {
  const reader = new ScrapeReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = traces ? new CountingExporter() : undefined;
  const tracerProvider = traces
    ? new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] })
    : undefined;
  return {
    options: { meterProvider, tracerProvider },
    async counted(name) {
      const { resourceMetrics, errors } = await reader.collect();
      if (errors.length) throw errors[0];
      let sum = 0;
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) {
          if (metric.descriptor.name !== name) continue;
          for (const point of metric.dataPoints) sum += point.value;
        }
      }
      return sum;
    },
    async spans() {
      if (!tracerProvider) return 0;
      await tracerProvider.forceFlush();
      return exporter.exported;
    },
    async shutdown() {
      await meterProvider.shutdown();
      await tracerProvider?.shutdown();
    },
  };
}
