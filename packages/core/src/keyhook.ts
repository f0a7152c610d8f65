import { type AdminSessionOptions, createAdminSessionVerifier } from './admin/session.js';
import { type Clock, cryptoRandomBytes, type RandomBytes, systemClock } from './clock.js';
import { type EncryptionKeyInput, generateEncryptionKey, SecretBox } from './crypto/secret-box.js';
import { Events } from './delivery/publish.js';
import { DEFAULT_RETRY_SCHEDULE_MS } from './delivery/schedule.js';
import { DEFAULT_ATTEMPT_TIMEOUT_MS, WebhookSender } from './delivery/sender.js';
import { Deliveries } from './delivery/service.js';
import { DeliveryWorker, type DeliveryWorkerOptions } from './delivery/worker.js';
import { adminDeliveryRoutes } from './http/admin-deliveries.js';
import { adminKeyRoutes } from './http/admin-keys.js';
import { adminWebhookRoutes } from './http/admin-webhooks.js';
import { createHttpCore, type GuardResult } from './http/handler.js';
import type { ApiOperation } from './http/openapi.js';
import type { KeyhookRequest, KeyhookResponse, RequestHeaders, RouteDefinition } from './http/types.js';
import { whoamiRoute } from './http/whoami.js';
import { Idempotency } from './idempotency/service.js';
import { LastUsedRecorder } from './keys/last-used.js';
import { ApiKeys } from './keys/service.js';
import { consoleLogger, type Logger } from './logger.js';
import type { Scope } from './scopes.js';
import type { Store } from './store/types.js';
import { Webhooks } from './webhooks/service.js';
import type { LookupAll, UrlPolicy } from './webhooks/url-policy.js';
import { toWebhookView, type WebhookView } from './webhooks/view.js';

export const DEFAULT_ADMIN_BODY_LIMIT = 64 * 1024;

/** Where adapters mount keyhook's routes unless told otherwise (DESIGN.md §2). */
export const DEFAULT_PREFIX = '/api/v1';

export interface KeyhookOptions {
  store: Store;
  adminSession: AdminSessionOptions;
  clock?: Clock;
  randomBytes?: RandomBytes;
  logger?: Logger;
  /** Largest admin request body in bytes. Default 64 KiB. */
  adminBodyLimit?: number;
  /**
   * How many verified keys to keep in memory (default 10,000); `0` reads the store on every
   * verification. A cached key is served only while the store's key-change version stands, so
   * a revoke or rotate is refused within the bound the store documents.
   */
  verifiedKeyCacheEntries?: number;
  /**
   * `development` allows `http://` webhook URLs and private addresses, and generates an
   * encryption key when none is given. Default: `production` when NODE_ENV is `production`,
   * else `development` (DESIGN.md §5).
   */
  mode?: 'development' | 'production';
  /**
   * The master key for secrets at rest (AES-256-GCM): 32 bytes, or their base64. Required in
   * production. In development a random key is generated for this process only, so a host
   * that restarts should pass a kept one (the reference server does).
   */
  encryptionKey?: EncryptionKeyInput;
  /** Earlier master keys, still used to open values sealed before a key rotation. */
  previousEncryptionKeys?: readonly EncryptionKeyInput[];
  /** Overrides of the webhook URL policy; the defaults follow `mode`. */
  webhookUrlPolicy?: Partial<UrlPolicy>;
  /** How long an Idempotency-Key's answer is kept, in ms. Default 24 h. */
  idempotencyRetentionMs?: number;
  /** Webhook delivery (DESIGN.md §6). */
  delivery?: DeliveryOptions;
}

export interface DeliveryOptions {
  /** Waits after each failed attempt, in ms; its length is the number of retries. Default 1m, 5m, 15m, 1h, 3h, 6h. */
  retrySchedule?: readonly number[];
  /** One attempt's limit, connect to answer, in ms. Default 10 s. */
  timeoutMs?: number;
  /** Held deliveries (endpoint disabled) fail after this long, in ms. Default 3 days. */
  heldRetentionMs?: number;
  /** Called when five consecutive permanent failures disabled an endpoint. Errors are logged, not thrown. */
  onEndpointDisabled?: (webhook: WebhookView) => void | Promise<void>;
  /** Name resolution for the sender; the system resolver by default. Every answer is still checked. */
  lookup?: LookupAll;
}

export interface Keyhook {
  /** Every route `handle` serves, relative to the mount point; adapters register these. */
  readonly routes: readonly RouteDefinition[];
  /**
   * Those routes as the OpenAPI document describes them, mounted at `prefix` (default
   * `/api/v1`): for `openApiDocument`, beside a host's own operations.
   */
  operations(prefix?: string): ApiOperation[];
  /** Adapters stop reading a body past this many bytes and pass `bodyError: 'too_large'`. */
  readonly maxBodyBytes: number;
  /** The key rules, for host code (seeding, scripts). */
  readonly keys: ApiKeys;
  /** The webhook endpoint rules, for host code. */
  readonly webhooks: Webhooks;
  /** `events.publish(...)`: an event and its deliveries, in one transaction. */
  readonly events: Events;
  /** Deliveries as the admin endpoints see them: list, read, retry. */
  readonly deliveries: Deliveries;
  /**
   * A delivery worker for this keyhook, not yet started. Run one per process that should send
   * (any number, on any number of hosts: leases keep them apart). Publishing through this
   * keyhook wakes it at once.
   */
  createWorker(options?: DeliveryWorkerOptions): DeliveryWorker;
  readonly store: Store;
  /** The whole HTTP surface: a raw request in, a response out. */
  handle(request: KeyhookRequest): Promise<KeyhookResponse>;
  /** The data-plane guard for host routes: verifies the bearer key and, if given, its scope. */
  authenticate(headers: RequestHeaders, scope?: Scope): Promise<GuardResult>;
  /**
   * `authenticate` for adapters' hot path: the result itself when the key is cached, a promise
   * only when the store must be asked. Never throws; a refusal is a finished response.
   */
  guard(headers: RequestHeaders, scope?: Scope): GuardResult | Promise<GuardResult>;
  /**
   * Stops the workers it created (attempts in flight finish and are recorded) and waits for
   * background writes. The store stays open: its owner closes it.
   */
  close(): Promise<void>;
}

export function createKeyhook(options: KeyhookOptions): Keyhook {
  const clock = options.clock ?? systemClock;
  const randomBytes = options.randomBytes ?? cryptoRandomBytes;
  const logger = options.logger ?? consoleLogger;
  const maxBodyBytes = options.adminBodyLimit ?? DEFAULT_ADMIN_BODY_LIMIT;
  const keys = new ApiKeys({
    store: options.store,
    clock,
    randomBytes,
    cacheEntries: options.verifiedKeyCacheEntries,
  });
  const lastUsed = new LastUsedRecorder(options.store, clock, logger);
  const mode = options.mode ?? (process.env['NODE_ENV'] === 'production' ? 'production' : 'development');
  const secrets =
    options.encryptionKey !== undefined
      ? new SecretBox(options.encryptionKey, options.previousEncryptionKeys)
      : developmentSecretBox(mode, logger);
  const development = mode === 'development';
  const urlPolicy = {
    allowHttp: development,
    allowPrivateAddresses: development,
    ...options.webhookUrlPolicy,
  };
  const workers = new Set<DeliveryWorker>();
  const wakeWorkers = () => {
    for (const worker of workers) worker.wake();
  };
  const webhooks = new Webhooks({
    store: options.store,
    clock,
    randomBytes,
    secrets,
    urlPolicy,
    onEnabled: wakeWorkers,
  });
  const events = new Events({
    store: options.store,
    clock,
    randomBytes,
    onPublished: wakeWorkers,
    handoff: () => {
      for (const worker of workers) {
        const handoff = worker.reserveHandoff();
        if (handoff) return handoff;
      }
      return undefined;
    },
  });
  const deliveries = new Deliveries({ store: options.store, clock, onQueued: wakeWorkers });
  const delivery = options.delivery ?? {};
  const timeoutMs = delivery.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  const retrySchedule = delivery.retrySchedule ?? DEFAULT_RETRY_SCHEDULE_MS;
  const createWorker = (workerOptions?: DeliveryWorkerOptions) => {
    const worker = new DeliveryWorker(
      {
        store: options.store,
        clock,
        randomBytes,
        logger,
        sender: new WebhookSender({ timeoutMs, policy: urlPolicy, lookup: delivery.lookup }),
        retry: { schedule: retrySchedule, random: Math.random },
        timeoutMs,
        heldRetentionMs: delivery.heldRetentionMs,
        signingSecret: (webhook) => webhooks.signingSecret(webhook),
        onEndpointDisabled: delivery.onEndpointDisabled
          ? (webhook) => delivery.onEndpointDisabled?.(toWebhookView(webhook))
          : undefined,
      },
      workerOptions,
    );
    workers.add(worker);
    return worker;
  };
  const idempotency = new Idempotency({
    store: options.store,
    clock,
    randomBytes,
    secrets,
    logger,
    retentionMs: options.idempotencyRetentionMs,
  });
  const routes = [
    ...adminKeyRoutes(keys, clock),
    ...adminWebhookRoutes(webhooks, idempotency),
    ...adminDeliveryRoutes(deliveries),
    whoamiRoute,
  ];
  const http = createHttpCore({
    routes,
    keys,
    verifyAdminSession: createAdminSessionVerifier(options.adminSession, clock),
    lastUsed,
    clock,
    randomBytes,
    logger,
    maxBodyBytes,
  });
  return {
    routes: routes.map(({ method, path }) => ({ method, path })),
    operations: (prefix = DEFAULT_PREFIX) =>
      routes.map((route) => ({
        method: route.method,
        path: `${prefix}${route.path}`,
        summary: route.doc.summary,
        success: route.doc.success,
        requestBody: route.doc.requestBody,
        query: route.doc.query,
        idempotent: route.doc.idempotent,
        auth: route.auth,
        tag: route.path.includes('/deliveries')
          ? 'Deliveries'
          : route.path.startsWith('/admin/webhooks')
            ? 'Webhooks'
            : 'API keys',
      })),
    maxBodyBytes,
    keys,
    webhooks,
    events,
    deliveries,
    createWorker,
    store: options.store,
    handle: http.handle,
    authenticate: async (headers, scope) => http.guard(headers, scope),
    guard: http.guard,
    close: async () => {
      await Promise.all([...workers].map((worker) => worker.stop()));
      await lastUsed.flush();
    },
  };
}

/** Without a configured key: refused in production; in development a key for this process only. */
function developmentSecretBox(mode: 'development' | 'production', logger: Logger): SecretBox {
  if (mode === 'production') {
    throw new TypeError('keyhook: encryptionKey is required in production (32 bytes, base64)');
  }
  return new SecretBox(generateEncryptionKey(), [], () =>
    logger.warn(
      {},
      'no encryptionKey: sealing with a key for this process only; it will not open after a restart',
    ),
  );
}
