import {
  type Attributes,
  context,
  isSpanContextValid,
  type Link,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import type { AttemptResult } from './delivery/outcome.js';
import type { DeliveryStatus } from './delivery/states.js';
import { deliveryOutcome } from './telemetry.js';

/** W3C Trace Context, version 00: `00-<trace id>-<parent span id>-<flags>`. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A span context as the W3C `traceparent` header carries it. */
export function formatTraceparent(spanContext: SpanContext): string {
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/** A stored `traceparent` as a span context to link to; undefined for null or anything malformed. */
export function parseTraceparent(text: string | null): SpanContext | undefined {
  if (text === null) return undefined;
  const match = TRACEPARENT.exec(text);
  if (match === null) return undefined;
  const spanContext: SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  return isSpanContextValid(spanContext) ? spanContext : undefined;
}

/**
 * The `traceparent` of the span active where this is called (the caller of `events.publish`),
 * or null when there is none. It is stored with the event, so the attempts, which run later and
 * maybe on another instance, can link to it.
 */
export function activeTraceContext(): string | null {
  const spanContext = trace.getSpanContext(context.active());
  return spanContext !== undefined && isSpanContextValid(spanContext) ? formatTraceparent(spanContext) : null;
}

/** What an attempt's span says about the delivery it is an attempt of. */
export interface AttemptSpanInput {
  url: string;
  tenantId: string;
  webhookId: string;
  deliveryId: string;
  eventId: string;
  eventType: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** The event's stored `traceparent`: the span the attempt's span links to. */
  traceContext: string | null;
  startedAt: Date;
}

/** One attempt's span, started: its `traceparent` header (when sent), and how it ends. */
export interface AttemptSpan {
  /** The value of the `traceparent` header to send, or undefined to send none. */
  traceparent: string | undefined;
  /** Ends the span at `at`; `state` is the delivery's recorded state, undefined when none was recorded. */
  end(result: AttemptResult, state: DeliveryStatus | undefined, at: Date): void;
}

/**
 * keyhook's spans, through `@opentelemetry/api` only: no-ops until the host registers a tracer
 * provider (or passes one as `telemetry.tracerProvider`). Each delivery attempt is an HTTP
 * client span (OpenTelemetry's HTTP semantic conventions) in a trace of its own, linked to the
 * span that was active at publish: an event fans out to many endpoints and may be retried for
 * hours, so the attempts are not children of a request that ended long ago.
 */
export class KeyhookTracing {
  private readonly tracer: Tracer;

  constructor(
    provider: TracerProvider = trace.getTracerProvider(),
    /** Send `traceparent` with each delivery (`telemetry.traceparent`). */
    private readonly propagate = false,
  ) {
    this.tracer = provider.getTracer('@keyhook/core');
  }

  startAttempt(input: AttemptSpanInput): AttemptSpan {
    const published = parseTraceparent(input.traceContext);
    const links: Link[] | undefined = published === undefined ? undefined : [{ context: published }];
    const span = this.tracer.startSpan('POST', {
      kind: SpanKind.CLIENT,
      startTime: input.startedAt,
      links,
      root: true,
    });
    if (span.isRecording()) {
      try {
        span.setAttributes(attemptAttributes(input));
      } catch {
        // A URL that no longer parses (it was checked when the webhook was saved): the span goes
        // without its HTTP attributes rather than the attempt without its span's end.
      }
    }
    let traceparent: string | undefined;
    if (this.propagate) {
      // The attempt's own span, so the receiver's spans nest under it; without a tracer that
      // records, the publisher's span still joins the two sides.
      const own = span.spanContext();
      traceparent = isSpanContextValid(own) ? formatTraceparent(own) : (input.traceContext ?? undefined);
    }
    return {
      traceparent,
      end: (result, state, at) => {
        if (span.isRecording()) {
          const outcome = state === undefined ? undefined : deliveryOutcome(state);
          if (outcome !== undefined) span.setAttribute('keyhook.delivery.outcome', outcome);
          if (result.kind === 'response') {
            span.setAttribute('http.response.status_code', result.status);
            // Only a 2xx delivers: a redirect is not followed, so it fails like a 4xx or a 5xx.
            if (result.status < 200 || result.status >= 300) {
              span.setAttribute('error.type', String(result.status));
              span.setStatus({ code: SpanStatusCode.ERROR });
            }
          } else {
            span.setAttribute(
              'error.type',
              result.message.startsWith('timed out') ? 'timeout' : 'connection',
            );
            span.setStatus({ code: SpanStatusCode.ERROR, message: result.message });
          }
        }
        span.end(at);
      },
    };
  }
}

/**
 * The span's attributes: the HTTP client conventions, then keyhook's. No `url.full` and no path:
 * a webhook URL often carries the receiver's own secret in its path or query (Slack's, Discord's
 * incoming webhooks), and spans travel further than the webhook's settings. The webhook id names
 * the endpoint instead.
 */
function attemptAttributes(input: AttemptSpanInput): Attributes {
  const url = new URL(input.url);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const attributes: Attributes = {
    'http.request.method': 'POST',
    'server.address': url.hostname,
    'server.port': port,
    'url.scheme': url.protocol.slice(0, -1),
    'keyhook.tenant.id': input.tenantId,
    'keyhook.webhook.id': input.webhookId,
    'keyhook.delivery.id': input.deliveryId,
    'keyhook.delivery.attempt': input.attempt,
    'keyhook.event.id': input.eventId,
    'keyhook.event.type': input.eventType,
  };
  if (input.attempt > 1) attributes['http.request.resend_count'] = input.attempt - 1;
  return attributes;
}
