import { EventEmitter } from 'node:events';
import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import { Agent } from 'undici';
import type { SignatureScheme } from '../store/types.js';
import {
  checkWebhookUrl,
  type LookupAll,
  resolveCheckedAddresses,
  type UrlPolicy,
  UrlPolicyError,
} from '../webhooks/url-policy.js';
import type { AttemptResult } from './outcome.js';
import { DEFAULT_HEADER_NAMES, type DeliveryHeaderNames, signedHeaders } from './signature.js';

/** docs/decisions.md §8.5: at most this much of a receiver's answer is kept in the attempt log. */
export const MAX_LOGGED_RESPONSE_BYTES = 4096;

/** docs/decisions.md §8.5: one attempt may take this long, connect to last byte, unless configured. */
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;

const USER_AGENT = 'keyhook-webhooks/1 (+https://github.com/keyhook/keyhook)';

/** Checked URLs kept per sender: its policy never changes, and most attempts go to a few endpoints. */
const CHECKED_URL_ENTRIES = 1000;

/** A URL the policy allows, as the origin and path a request goes to. */
type CheckedTarget = { ok: true; origin: string; path: string } | { ok: false; reason: string };

export interface SendRequest {
  url: string;
  /** The stored event body: the same bytes on every attempt. */
  payload: string;
  eventId: string;
  /**
   * The plaintext `whsec_…` secret, used only to sign this attempt; inside a rotation's
   * overlap, the current and the previous secret, in that order.
   */
  secret: string | readonly string[];
  /** The attempt's own time, in unix seconds, as signed (`t=`, or `webhook-timestamp`). */
  unixSeconds: number;
  /** The endpoint's scheme: keyhook's headers, or the Standard Webhooks ones. Default keyhook. */
  signatureScheme?: SignatureScheme | undefined;
  /** The W3C `traceparent` header to send (`telemetry.traceparent`); none when undefined. */
  traceparent?: string | undefined;
}

export interface SendOutcome {
  result: AttemptResult;
  durationMs: number;
  /** At most MAX_LOGGED_RESPONSE_BYTES of the response body, as UTF-8 text; null without a response. */
  responseBody: string | null;
  /**
   * Why the URL policy refused the host at connect time, naming the host and the address it
   * resolved to: for the operator's log, while the attempt's error says only that it is not public.
   */
  refusal?: string | undefined;
}

export interface SenderOptions {
  timeoutMs?: number | undefined;
  policy: UrlPolicy;
  /** Name resolution, injectable for tests; the system resolver otherwise. */
  lookup?: LookupAll | undefined;
  /** The event-id and signature header names (checked: signature.ts). Default `keyhook-*`. */
  headerNames?: DeliveryHeaderNames | undefined;
}

/**
 * POSTs signed deliveries (docs/decisions.md §5.4, §8.5). The host is resolved here and every
 * address it resolves to is checked with the URL policy; the socket then connects to a checked
 * address only, so a DNS answer that changes between the check and the connect cannot reach a
 * private address (no rebinding). Redirects are never followed: a 3xx is an answer like any other.
 * Connections are kept alive per origin, which a busy endpoint feels as lower latency.
 */
export class WebhookSender {
  private readonly timeoutMs: number;
  /**
   * undici's Agent: a pool of kept-alive connections per origin, at most 64 each. The sender
   * costs about a third less CPU per request on it than on node:http's (docs/decisions.md
   * §8.12). Its sockets resolve names through `lookup`, so they connect to checked addresses
   * only. Made at the first send after construction or after close(), so a worker stopped and
   * started again sends on a new one.
   */
  private agent: Agent | undefined;
  private readonly undiciTimeoutMs: number;
  private readonly checkedUrls = new Map<string, CheckedTarget>();
  private readonly headerNames: DeliveryHeaderNames;

  constructor(private readonly options: SenderOptions) {
    this.headerNames = options.headerNames ?? DEFAULT_HEADER_NAMES;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
    // The attempt's own deadline (below) covers connect, send and answer. undici's timers only
    // keep its defaults from outliving it: they are set past it, so the deadline always ends an
    // attempt first and the log says so in one way (attemptError).
    this.undiciTimeoutMs = this.timeoutMs + UNDICI_MARGIN_MS;
  }

  private openAgent(): Agent {
    const timeout = this.undiciTimeoutMs;
    return new Agent({
      connections: 64,
      connect: { lookup: checkedLookup(this.options.policy, this.options.lookup), timeout },
      headersTimeout: timeout,
      bodyTimeout: timeout,
    });
  }

  async send(request: SendRequest): Promise<SendOutcome> {
    const started = performance.now();
    const finish = (result: AttemptResult, responseBody: string | null = null): SendOutcome => ({
      result,
      durationMs: Math.round(performance.now() - started),
      responseBody,
    });
    // The URL was checked at create; checked again, since the policy may have tightened since.
    const checked = this.check(request.url);
    if (!checked.ok) return finish({ kind: 'error', message: `refused: ${checked.reason}` });
    const body = Buffer.from(request.payload, 'utf8');
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'user-agent': USER_AGENT,
      ...signedHeaders(
        request.signatureScheme ?? 'keyhook',
        this.headerNames,
        request.secret,
        request.eventId,
        body,
        request.unixSeconds,
      ),
    };
    if (request.traceparent !== undefined) headers['traceparent'] = request.traceparent;
    // One deadline for the whole attempt: connect, send, and the answer's first 4 KiB. A status
    // that came in time stands, with whatever of the body came with it. undici takes an
    // EventEmitter as the abort signal, at a fraction of an AbortController's cost.
    const deadline = new EventEmitter();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      deadline.emit('abort');
    }, this.timeoutMs);
    try {
      // undici never follows a redirect unless asked: a 3xx is an answer like any other.
      this.agent ??= this.openAgent();
      const response = await this.agent.request({
        origin: checked.origin,
        path: checked.path,
        method: 'POST',
        headers,
        body,
        signal: deadline,
      });
      const text = await readAtMost(response.body, MAX_LOGGED_RESPONSE_BYTES);
      return finish(
        {
          kind: 'response',
          status: response.statusCode,
          retryAfter: headerValue(response.headers['retry-after']),
        },
        loggable(text),
      );
    } catch (error) {
      // The connect-time lookup's refusal, as undici passes it on.
      if (error instanceof UrlPolicyError) {
        return {
          ...finish({ kind: 'error', message: `refused: ${error.reason}` }),
          refusal: error.detail,
        };
      }
      return finish({ kind: 'error', message: attemptError(error, timedOut, this.timeoutMs) });
    } finally {
      clearTimeout(timer);
    }
  }

  private check(url: string): CheckedTarget {
    let checked = this.checkedUrls.get(url);
    if (checked === undefined) {
      const check = checkWebhookUrl(url, this.options.policy);
      checked = check.ok
        ? { ok: true, origin: check.url.origin, path: `${check.url.pathname}${check.url.search}` }
        : check;
      if (this.checkedUrls.size >= CHECKED_URL_ENTRIES) {
        this.checkedUrls.delete(this.checkedUrls.keys().next().value!);
      }
      this.checkedUrls.set(url, checked);
    }
    return checked;
  }

  /** Closes kept-alive connections; a later send opens new ones. */
  close(): void {
    const agent = this.agent;
    this.agent = undefined;
    void agent?.destroy().catch(() => {});
  }
}

function checkedLookup(policy: UrlPolicy, lookup: LookupAll | undefined): LookupFunction {
  return ((hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolveCheckedAddresses(hostname, policy, lookup).then(
      (addresses) => {
        if (options.all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: unknown) => callback(error),
    );
  }) as LookupFunction;
}

/**
 * The first `max` bytes of an answer, as UTF-8 text. It stops reading there (the rest of a body
 * that may never end is dropped with its connection), and settles with what came when the body
 * ends, fails or is cut off by the deadline.
 */
function readAtMost(body: Readable, max: number): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let kept = 0;
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      if (!body.readableEnded) body.destroy();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    body.on('data', (chunk: Buffer) => {
      const part = chunk.subarray(0, max - kept);
      chunks.push(part);
      kept += part.length;
      if (kept >= max) settle();
    });
    body.on('end', settle);
    body.on('error', settle);
    body.on('close', settle);
  });
}

/**
 * A receiver's answer or an error as the attempt log keeps it: U+0000 becomes U+FFFD, since
 * Postgres text cannot hold it, and a store that refused the log would leave the delivery
 * unrecorded, to be sent again and again.
 */
function loggable(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
}

function headerValue(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? (value[0] ?? null) : value;
}

/** undici's own timeouts, which report what the attempt's deadline reports. */
const UNDICI_TIMEOUTS = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);
/** How far past the attempt's deadline undici's timers are set. */
const UNDICI_MARGIN_MS = 1000;

/**
 * An attempt's error as the attempt log keeps it. A receiver too slow for the deadline reads
 * `timed out after N ms` whichever timer noticed first (docs/decisions.md §8.5).
 */
export function attemptError(error: unknown, timedOut: boolean, timeoutMs: number): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (timedOut || (typeof code === 'string' && UNDICI_TIMEOUTS.has(code)))
    return `timed out after ${timeoutMs} ms`;
  return describe(error);
}

/** What went wrong, for the attempt log: the message and code, never a stack or a secret. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return 'request failed';
  const code = (error as { code?: unknown }).code;
  const text =
    typeof code === 'string' && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  return loggable(text.slice(0, 500));
}
