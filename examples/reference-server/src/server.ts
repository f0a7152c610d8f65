import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { bodyUnread, keyhookFastify } from '@keyhook/adapter-fastify';
import { type AdminSessionOptions, createKeyhook, type DeliveryWorkerOptions } from '@keyhook/core';
import { lingerAfterAnswer, newId } from '@keyhook/core/http';
import type { Store } from '@keyhook/core/store';
import { keyhookPortal } from '@keyhook/portal';
import Fastify, { type FastifyHttpOptions, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { registerAnswerOrder } from './answer-order.js';
import type { ReferenceKeyhook } from './catalog.js';
import { REFERENCE_EVENTS, REFERENCE_HEADERS, REFERENCE_SCOPES } from './catalog.js';
import { type AdminAuthConfig, DEFAULT_TIMEOUTS, type ServerConfig, type ServerTimeouts } from './config.js';
import { openDataPlane } from './data-plane/index.js';
import type { StagingJobHooks, StagingJobs } from './data-plane/jobs.js';
import { encryptionKeyFor } from './encryption-key.js';
import {
  clientErrorReply,
  connectReply,
  frameworkErrorReply,
  registerErrorReplies,
} from './error-replies.js';
import { registerHealthz } from './healthz.js';
import { withLogRedaction } from './log-redaction.js';
import { openStorage, type Storage } from './open-store.js';
import { registerApiDocs } from './openapi.js';
import { type ServerTelemetry, startTelemetry } from './telemetry.js';

/** docs/decisions.md §1.1: the mount point. */
export const API_PREFIX = '/api/v1';
/** Where keyhookFastify serves the customer portal by default, below the prefix (README "The portal"). */
export const PORTAL_PATH = `${API_PREFIX}/portal`;
/** The portal's brand: its page title and header. */
export const PORTAL_BRAND_NAME = 'keyhook reference server';

export interface BuildServerOptions {
  /** Fastify's `logger` option: `false` (default) for silence, `true` or pino options to log. */
  logger?: FastifyServerOptions['logger'];
  /** Run a delivery worker in this process (default true); any number of instances may. */
  worker?: boolean | DeliveryWorkerOptions;
  /** The data plane's jobs: tests inject failures and shorten the sweep. */
  staging?: { hooks?: StagingJobHooks; sweepMs?: number; staleClaimMs?: number };
}

export interface ReferenceServer {
  /** Where Prometheus text is served, with KEYHOOK_METRICS_PORT; undefined without. */
  metricsUrl?: string | undefined;
  app: FastifyInstance;
  store: Store;
  keyhook: ReferenceKeyhook;
  config: ServerConfig;
  /** Every route the app registered (method and URL), HEAD included. */
  routes: readonly { method: string; url: string }[];
  /**
   * Stops taking connections, lets requests in flight finish, stops the delivery worker (its
   * attempts in flight finish and are recorded), flushes keyhook, closes the store, then
   * exports the last metrics and spans and stops telemetry (failures there are logged, not thrown).
   */
  close(): Promise<void>;
}

/**
 * Everything but listening, so one process can hold several instances (the two-instance
 * tests) and `main.ts` stays a thin entry.
 */
export async function buildServer(
  config: ServerConfig,
  options: BuildServerOptions = {},
): Promise<ReferenceServer> {
  const app = Fastify({
    logger: withLogRedaction(options.logger),
    // Every response carries an x-request-id (docs/decisions.md §1.3); a client cannot choose it.
    requestIdHeader: false,
    genReqId: () => newId('req'),
    // Item keys are up to 256 URL-safe characters (data-plane.md §3.3); Fastify's default
    // stops at 100.
    // Under routerOptions since Fastify 5.5 (the top-level option is deprecated, FSTDEP022).
    routerOptions: { maxParamLength: 300 },
    // data-plane.md §7.4: what Fastify's router and Node's parser refuse
    // answers in the envelope too.
    frameworkErrors: frameworkErrorReply,
    clientErrorHandler: clientErrorReply,
    ...timeoutOptions(config.timeouts),
    // request.ip, by which failed verifications are limited, is the client's only through trusted proxies.
    trustProxy: typeof config.trustProxy === 'number' ? trustHops(config.trustProxy) : config.trustProxy,
  });
  // Node closes a CONNECT's connection without an answer unless someone listens.
  app.server.on('connect', (_request, socket: Socket) => connectReply(app.server, socket));
  // Every route as registered, for the test that holds the OpenAPI document to it.
  const registered: { method: string; url: string }[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) registered.push({ method, url: route.url });
  });
  let storage: Storage | undefined;
  // Prometheus text on a port of its own (never the API's), and OTLP export (README "OpenTelemetry").
  const telemetry = await startTelemetry(config, app.log);
  try {
    storage = await openStorage(config.store, app.log);
    const { store } = storage;
    const keyhook = createKeyhook({
      store,
      adminSession: {
        ...adminSessionOptions(config.admin),
        maxTokenLifetimeSeconds: config.adminMaxTokenLifetimeSeconds,
      },
      // This server's scopes, events and header names (catalog.ts), as any host passes its own.
      scopes: REFERENCE_SCOPES,
      eventCatalog: REFERENCE_EVENTS,
      logger: app.log,
      mode: config.production ? 'production' : 'development',
      encryptionKey: await encryptionKeyFor(config, storage.store),
      previousEncryptionKeys: config.previousEncryptionKeys,
      ...(config.listByteBudget && { listByteBudget: config.listByteBudget }),
      // The RateLimit fields on every answer to a limited key: the data plane's routes do real work beside them.
      rateLimit: { default: config.keyRateLimit, failedAuth: config.failedAuthLimit, successHeaders: true },
      telemetry: telemetry.keyhookOptions,
      // The links portal.createSession mints name the portal where it is mounted below.
      portal: { url: PORTAL_PATH },
      delivery: {
        headers: REFERENCE_HEADERS,
        retrySchedule: config.retryScheduleMs,
        ...(config.deliveryTimeoutMs && { timeoutMs: config.deliveryTimeoutMs }),
        ...(config.retentionMs && { retentionMs: config.retentionMs }),
        // The health callbacks, logged: a host would page someone, or tell the endpoint's owner.
        onEndpointDisabled: (webhook, reason) =>
          app.log.warn({ webhookId: webhook.id, reason }, 'webhook endpoint disabled'),
        onDeliveryFailed: (delivery) =>
          app.log.warn(
            {
              deliveryId: delivery.id,
              webhookId: delivery.webhookId,
              eventId: delivery.eventId,
              attempts: delivery.attemptCount,
            },
            'delivery failed for good',
          ),
      },
    });
    let draining = false;
    app.addHook('preClose', async () => {
      draining = true;
    });
    app.addHook('onSend', async (request, reply) => {
      if (!reply.hasHeader('x-request-id')) reply.header('x-request-id', request.id);
      // A keep-alive socket would hold the drain open after its last answer: end it with this one.
      // So would a body nobody read (a refusal before the body): Node would read all of it to
      // keep the connection, for as long as the client cares to send. Such a connection lingers
      // for that body, so that a client still sending it reads this answer.
      if (bodyUnread(request)) {
        reply.header('connection', 'close');
        lingerAfterAnswer(request.raw.socket, { maxMs: app.server.requestTimeout });
      } else if (draining) reply.header('connection', 'close');
    });
    // After each answer Node gives an idle connection keepAliveTimeout plus one second, so that
    // a client told the shorter time closes first; it is closed at the idle timeout instead, the
    // time Keep-Alive states.
    app.addHook('onResponse', (request, _reply, done) => {
      request.raw.socket?.setTimeout(config.timeouts.idleMs);
      done();
    });
    registerErrorReplies(app);
    registerAnswerOrder(app);
    // The customer portal at keyhookFastify's default, PORTAL_PATH; never framed (frame-ancestors 'none').
    const portal = keyhookPortal(keyhook, { brand: { name: PORTAL_BRAND_NAME } });
    await app.register(keyhookFastify, { keyhook, prefix: API_PREFIX, portal });
    const dataPlane = await openDataPlane(storage.staging(keyhook.events), keyhook, app.log, options.staging);
    await app.register(dataPlane.routes, { prefix: API_PREFIX });
    registerHealthz(app, store);
    registerApiDocs(app, keyhook, API_PREFIX);
    await app.ready();
    if (options.worker !== false) {
      keyhook.createWorker(typeof options.worker === 'object' ? options.worker : undefined).start();
    }
    dataPlane.jobs.start();
    return {
      app,
      store,
      keyhook,
      config,
      routes: registered,
      metricsUrl: telemetry.metricsUrl,
      close: closeOnce(app, keyhook, dataPlane.jobs, storage, telemetry),
    };
  } catch (error) {
    await app.close().catch(() => {});
    await storage?.close().catch(() => {});
    await telemetry.close();
    throw error;
  }
}

/**
 * data-plane.md §7.4. Node's `headersTimeout` and `requestTimeout` (Fastify's defaults leave the
 * latter off: a client could send headers and then a body forever) answer 408 and close; they
 * are checked every `connectionsCheckingInterval` (Node's default 30 s, here at most 1 s late).
 * `connectionTimeout` is the socket's idle timeout: a connection on which nothing arrives for
 * that long is closed, without an answer. Between requests too: `keepAliveTimeout` is what
 * `Keep-Alive: timeout=` says (buildServer's onResponse hook takes back the second Node adds).
 */
function timeoutOptions(
  timeouts: ServerTimeouts = DEFAULT_TIMEOUTS,
): Pick<FastifyHttpOptions<Server>, 'requestTimeout' | 'connectionTimeout' | 'keepAliveTimeout' | 'http'> {
  const { headersMs, requestMs, idleMs } = timeouts;
  return {
    requestTimeout: requestMs,
    connectionTimeout: idleMs,
    keepAliveTimeout: idleMs,
    http: {
      // registerErrorReplies refuses a request without Host in the envelope; Node's refusal is bare.
      requireHostHeader: false,
      headersTimeout: headersMs,
      requestTimeout: requestMs,
      connectionsCheckingInterval: Math.max(
        25,
        Math.min(1000, Math.floor(Math.min(headersMs, requestMs) / 4)),
      ),
    },
  };
}

/** A hop count as proxy-addr reads it: the nearest `hops` proxies are trusted. */
function trustHops(hops: number): (address: string, hop: number) => boolean {
  return (_address, hop) => hop < hops;
}

function adminSessionOptions(admin: AdminAuthConfig): AdminSessionOptions {
  const claims = {
    ...(admin.issuer !== undefined && { issuer: admin.issuer }),
    ...(admin.audience !== undefined && { audience: admin.audience }),
  };
  return admin.kind === 'secret'
    ? { secret: admin.secret, ...claims }
    : { jwksUrl: admin.jwksUrl, ...claims };
}

function closeOnce(
  app: FastifyInstance,
  keyhook: ReferenceKeyhook,
  jobs: StagingJobs,
  storage: Storage,
  telemetry: ServerTelemetry,
): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= (async () => {
      await app.close();
      await jobs.stop();
      await keyhook.close();
      // The store may already be gone (a failed database, a test that closed it); closing is what we want.
      await storage
        .close()
        .catch((error: unknown) => app.log.warn({ err: error }, 'closing the store failed'));
      // Last, so the spans and counts of the attempts that just finished are exported.
      await telemetry.close();
    })();
    return closing;
  };
}
