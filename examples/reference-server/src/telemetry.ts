import type { TelemetryOptions } from '@keyhook/core';
import {
  context,
  createContextKey,
  type DiagLogger,
  DiagLogLevel,
  diag,
  ROOT_CONTEXT,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtobufMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import {
  defaultResource,
  detectResources,
  envDetector,
  type Resource,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { MeterProvider, type MetricReader, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { FastifyBaseLogger } from 'fastify';
import type { OtlpMetricsConfig, OtlpProtocol, ServerConfig } from './config.js';

/** `service.name` unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) names another. */
export const DEFAULT_SERVICE_NAME = 'keyhook-reference-server';

/**
 * How long the last flush and the shutdown after it may take together, per provider (the two
 * run side by side): a collector that does not answer must not hold the drain (20 s,
 * shutdown.ts) until it gives up and exits 1.
 */
export const TELEMETRY_CLOSE_TIMEOUT_MS = 5_000;

/** keyhook's meter and tracer providers, as configured, and how they end. */
export interface ServerTelemetry {
  /** createKeyhook's `telemetry`: a provider left undefined means core's no-op (or a host's global one). */
  keyhookOptions: TelemetryOptions;
  /** Where Prometheus text is served, with KEYHOOK_METRICS_PORT; undefined without. */
  metricsUrl: string | undefined;
  /** Exports what is left, then stops the providers (the Prometheus server too). Logs failures, never throws. */
  close(): Promise<void>;
}

/**
 * One meter provider whose readers are the Prometheus exporter (KEYHOOK_METRICS_PORT) and the
 * periodic OTLP reader, either or both, and a tracer provider when traces go out over OTLP.
 * Neither is registered globally: they are keyhook's, passed to createKeyhook, so a host that
 * embeds buildServer keeps its own global providers.
 */
export async function startTelemetry(config: ServerConfig, log: FastifyBaseLogger): Promise<ServerTelemetry> {
  const { metricsPort, otlp } = config;
  // First, as it can fail (a port in use) and nothing else needs stopping yet.
  const prometheus = metricsPort === null ? null : await startPrometheus(metricsPort, config.host);
  if (otlp.metrics !== null || otlp.traces !== null) {
    logDiagnostics(log);
    log.info(
      { metrics: otlp.metrics?.protocol ?? 'off', traces: otlp.traces?.protocol ?? 'off' },
      'OpenTelemetry: exporting over OTLP',
    );
  }
  const resource = serviceResource();
  const readers: MetricReader[] = [
    ...(prometheus ? [prometheus.reader] : []),
    ...(otlp.metrics ? [otlpMetricReader(otlp.metrics)] : []),
  ];
  const meterProvider = readers.length > 0 ? new MeterProvider({ resource, readers }) : undefined;
  const tracerProvider = otlp.traces ? startTracing(otlp.traces.protocol, resource) : undefined;
  return {
    keyhookOptions: { meterProvider, tracerProvider },
    metricsUrl: prometheus?.url,
    close: async () => {
      await Promise.all([
        meterProvider && flushAndShutDown('metrics', meterProvider, log),
        tracerProvider && flushAndShutDown('traces', tracerProvider, log),
      ]);
    },
  };
}

/** The Prometheus exporter, a pull reader, serving `/metrics` on `port`. */
async function startPrometheus(port: number, host: string): Promise<{ reader: MetricReader; url: string }> {
  const reader = new PrometheusExporter({ port, host, preventServerStart: true });
  await reader.startServer();
  return { reader, url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics` };
}

/**
 * The exporters are built without options: each reads its URL, headers, timeout, compression
 * and certificates from the standard variables itself. The reader's interval and timeout it
 * does not read, so config.ts does.
 */
function otlpMetricReader({ protocol, exportIntervalMs, exportTimeoutMs }: OtlpMetricsConfig): MetricReader {
  return new PeriodicExportingMetricReader({
    exporter: protocol === 'http/json' ? new JsonMetricExporter() : new ProtobufMetricExporter(),
    exportIntervalMillis: exportIntervalMs,
    exportTimeoutMillis: exportTimeoutMs,
  });
}

/** Batched spans (OTEL_BSP_* apply), sampled as OTEL_TRACES_SAMPLER says (parent-based, always on, by default). */
function startTracing(protocol: OtlpProtocol, resource: Resource): BasicTracerProvider {
  registerContextManager();
  const exporter = protocol === 'http/json' ? new JsonTraceExporter() : new ProtobufTraceExporter();
  return new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
}

/** The default name, then OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over it (envDetector reads both). */
function serviceResource(): Resource {
  return defaultResource()
    .merge(resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
}

/**
 * Core reads the span active at publish (`trace.getActiveSpan()`), and a span stays active
 * across an `await` only with a context manager (the API's default keeps none). The manager is
 * process-wide: it is registered only if none works yet (a host's, or another instance's, is
 * kept; registering over it would be refused with an error in the log), and it stays on close.
 */
function registerContextManager(): void {
  const probe = createContextKey('keyhook context manager probe');
  const working = context.with(ROOT_CONTEXT.setValue(probe, true), () => context.active().getValue(probe));
  if (working === true) return;
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

/**
 * OpenTelemetry reports a failed export (a collector down, a 4xx) through its diagnostic
 * logger, silent unless one is set: its warnings and errors go to the server's log. The
 * logger is process-wide, so the last instance to start with OTLP on gets them.
 */
function logDiagnostics(log: FastifyBaseLogger): void {
  const logger: DiagLogger = {
    error: (message, ...args) => log.error(...diagnostic(message, args)),
    warn: (message, ...args) => log.warn(...diagnostic(message, args)),
    info: () => {},
    debug: () => {},
    verbose: () => {},
  };
  diag.setLogger(logger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
}

/**
 * A log line's fields and message. The SDK's error handler passes an error as its JSON, stack
 * and all: the message says what failed, the error goes in `err`.
 */
function diagnostic(message: string, args: unknown[]): [object, string] {
  const fields = args.length > 0 ? { details: args.map(String) } : {};
  const error = parseError(message);
  return error
    ? [{ ...fields, err: error }, `OpenTelemetry: ${error.message}`]
    : [fields, `OpenTelemetry: ${message}`];
}

function parseError(text: string): { message: string } | null {
  if (!text.startsWith('{')) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    const message = (parsed as { message?: unknown } | null)?.message;
    return typeof message === 'string' ? (parsed as { message: string }) : null;
  } catch {
    return null;
  }
}

/**
 * forceFlush, then shutdown: the flush sends the last batch (spans ended and counts recorded
 * just before close), the shutdown stops the readers, the Prometheus server and the exporters.
 * A failed flush is logged and the shutdown still runs; the two together are bounded, so
 * telemetry can neither fail nor stall the drain. A shutdown cut short goes on in the background.
 */
async function flushAndShutDown(
  signal: string,
  provider: { forceFlush(): Promise<void>; shutdown(): Promise<void> },
  log: FastifyBaseLogger,
): Promise<void> {
  const steps = async () => {
    await provider
      .forceFlush()
      .catch((error: unknown) => log.warn({ err: error }, `OpenTelemetry ${signal}: the last export failed`));
    await provider.shutdown();
  };
  try {
    await within(TELEMETRY_CLOSE_TIMEOUT_MS, steps());
  } catch (error) {
    log.warn({ err: error }, `OpenTelemetry ${signal}: closing failed; the last export may be lost`);
  }
}

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
