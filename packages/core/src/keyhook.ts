import type { MeterProvider, TracerProvider } from '@opentelemetry/api';
import { type AdminSessionOptions, createAdminSessionVerifier } from './admin/session.js';
import type { EventCatalogEntry, EventMap } from './catalog/events.js';
import { type EventCatalog, type EventDefinition, eventCatalogOption } from './catalog/events.js';
import { ScopeCatalog, type ScopeInput, type ScopeNameOf } from './catalog/scopes.js';
import {
  type Clock,
  cryptoRandomBytes,
  type RandomBytes,
  systemClock,
  systemTimers,
  type Timers,
} from './clock.js';
import { type EncryptionKeyInput, generateEncryptionKey, SecretBox } from './crypto/secret-box.js';
import { DeliveryService } from './delivery/delivery-service.js';
import { type DeliveryView, toDeliveryView } from './delivery/delivery-view.js';
import { deliveryRateOption } from './delivery/endpoint-rate.js';
import { EventsFeed, type EventsFeedOption, eventsFeedPlan } from './delivery/event-feed.js';
import { EventService } from './delivery/publish.js';
import { checkRetention } from './delivery/retention.js';
import { checkRetrySchedule } from './delivery/schedule.js';
import { DEFAULT_ATTEMPT_TIMEOUT_MS, WebhookSender } from './delivery/sender.js';
import {
  type DeliveryHeaderNames,
  deliveryHeaderNames,
  signatureSchemeOption,
} from './delivery/signature.js';
import { TestEventSender } from './delivery/test-event.js';
import { type DeliveryWorkerOptions, Worker } from './delivery/worker.js';
import { adminDeliveryRoutes } from './http/admin-deliveries.js';
import { adminKeyRoutes } from './http/admin-keys.js';
import { adminWebhookRoutes } from './http/admin-webhooks.js';
import { feedRoute } from './http/feed-route.js';
import { createHttpCore, type Guard } from './http/handler.js';
import type { KeyhookRequest, KeyhookResponse, RequestHeaders, RouteDefinition } from './http/messages.js';
import type { ApiOperation } from './http/openapi-document.js';
import { checkListByteBudget } from './http/pagination.js';
import { toApiOperation } from './http/route-spec.js';
import { whoamiRoute } from './http/whoami.js';
import { Idempotency } from './idempotency/idempotency-service.js';
import { type ApiKeyFormat, ApiKeyFormats } from './keys/format.js';
import { ApiKeyService } from './keys/key-service.js';
import { LastUsedRecorder } from './keys/last-used.js';
import { type RateLimitOptions, RateLimits } from './keys/rate-limit.js';
import { consoleLogger, type Logger } from './logger.js';
import { portalApi } from './portal/portal-api.js';
import { PortalSessions } from './portal/portal-sessions.js';
import type { Portal } from './portal/portal-types.js';
import { HOW_TO_MAKE, isBlank, missingOption } from './required-options.js';
import type { ApiKeys, Deliveries, DeliveryWorker, EventPublisher, Webhooks } from './service-interfaces.js';
import { capabilityOf, missingCapability } from './store/capabilities.js';
import type { DeliveryRate, SignatureScheme, Store } from './store/types.js';
import { KeyhookMetrics } from './telemetry.js';
import { KeyhookTracing } from './tracing.js';
import type { LookupAll, UrlPolicy } from './webhooks/url-policy.js';
import { WebhookService } from './webhooks/webhook-service.js';
import { toWebhookView, type WebhookView } from './webhooks/webhook-view.js';

export const DEFAULT_ADMIN_BODY_LIMIT = 64 * 1024;

/** Where adapters mount keyhook's routes unless told otherwise (docs/decisions.md §1.1). */
export const DEFAULT_PREFIX = '/api/v1';

/** `KeyhookOptions` alone takes any scopes and event types; a host's is `KeyhookOptions<typeof scopes, typeof eventCatalog>`. */
export interface KeyhookOptions<
  Scopes extends readonly ScopeInput[] = readonly ScopeInput[],
  Catalog extends EventCatalog = EventCatalog,
> {
  store: Store;
  adminSession: AdminSessionOptions;
  /**
   * The scopes your API keys may carry, each a name or `{ name, description }` (the description
   * reaches the OpenAPI document). Declared inline or `as const`, they type `requireScope`.
   * Default none: keys then carry no scope, and a guard checks only the key
   * (docs/decisions.md §3.13).
   */
  scopes?: Scopes;
  /**
   * Your event catalog, each event type declared once:
   * `{ 'invoice.paid': { description, data: z.object(…) } }`. It types and checks
   * `events.publish`, lists what webhooks may subscribe to, and fills the OpenAPI document's
   * `webhooks`. Default none: nothing can be published or subscribed to until you declare it
   * (docs/decisions.md §3.13).
   */
  eventCatalog?: Catalog;
  /** @deprecated The old name of `eventCatalog`; give one of the two. */
  events?: Catalog;
  clock?: Clock;
  /**
   * Where the delivery worker's waits are set: its poll, scheduled retries, the backoff through
   * a store outage and the retention purge. Default: Node's timers. A test passes a virtual
   * clock as both `clock` and `timers`, and moves time instead of sleeping. An attempt's own
   * timeout stays on the system's timers: it bounds real network I/O.
   */
  timers?: Timers;
  randomBytes?: RandomBytes;
  logger?: Logger;
  /** Largest admin request body in bytes. Default 64 KiB. */
  adminBodyLimit?: number;
  /**
   * A list page's byte budget (docs/decisions.md §14): a page stops before the record that would
   * take its records' JSON past this many bytes, and its cursor continues from there; a record
   * larger than the budget comes alone. Whole bytes, at least 16 KiB. Default 1 MiB.
   */
  listByteBudget?: number;
  /**
   * How many verified keys to keep in memory (default 10,000); `0` reads the store on every
   * verification. A cached key is served only while the store's key-change version stands, so
   * a revoke or rotate is refused within the bound the store documents.
   */
  verifiedKeyCacheEntries?: number;
  /**
   * `development` allows `http://` webhook URLs and private addresses, and generates an
   * encryption key when none is given and the store keeps nothing past the process
   * (`MemoryStore`). Default: `production` when NODE_ENV is `production` (in any letter
   * case, around any spaces), else `development`.
   */
  mode?: 'development' | 'production';
  /**
   * The master key for secrets at rest (AES-256-GCM): 32 bytes, or their base64
   * (`generateEncryptionKey()` makes one). Required with any persistent store (SQLite file,
   * Postgres), in every mode: a key made up at start would not open, after a restart, the
   * signing secrets it sealed. Only with `MemoryStore` in development may it be left out.
   */
  encryptionKey?: EncryptionKeyInput;
  /** Earlier master keys, still used to open values sealed before a key rotation. */
  previousEncryptionKeys?: readonly EncryptionKeyInput[];
  /** Overrides of the webhook URL policy; the defaults follow `mode`. */
  webhookUrlPolicy?: Partial<UrlPolicy>;
  /** How long an Idempotency-Key's answer is kept, in ms. Default 24 h. */
  idempotencyRetentionMs?: number;
  /** Webhook delivery (docs/decisions.md §8). */
  delivery?: DeliveryOptions;
  /**
   * How new API keys look: a prefix of your own (`acme_live_`: lowercase, ending in `_`, so a
   * leaked key says whose it is and a scanner can find it) and, opt-in, a trailing CRC32
   * checksum that refuses a mistyped key before any store read. Default (docs/http-api.md §5.2):
   * `{ prefix: 'sk_live_', checksum: false }`.
   */
  keyFormat?: ApiKeyFormat;
  /**
   * More formats verification accepts: the ones keys were minted in before a change of
   * `keyFormat`, so they keep working (`[{ prefix: 'sk_live_' }]`). A rotated key keeps its
   * prefix and the format it belongs to.
   */
  acceptedKeyFormats?: readonly ApiKeyFormat[];
  /**
   * Rate limits of the data plane: a default for keys without a limit of their own, and a
   * limit on failed verifications per client address. Counted in this process's memory: exact
   * on one instance, at most N × the limit across N instances (keys/rate-limit.ts).
   */
  rateLimit?: RateLimitOptions;
  /**
   * Metrics and traces through `@opentelemetry/api`: no-ops until a provider is registered.
   * Register yours before `createKeyhook` (`metrics.setGlobalMeterProvider`,
   * `trace.setGlobalTracerProvider`), or pass them here. core's README lists the instruments
   * and the spans.
   */
  telemetry?: TelemetryOptions;
  /**
   * The customer portal's sessions (`keyhook.portal`; docs/decisions.md §22). The portal needs a
   * store with `PortalSessionStore` (docs/decisions.md §20.5).
   */
  portal?: PortalOptions;
  /**
   * The events feed, `GET /events` (docs/decisions.md §8.17): a receiver asks what happened since
   * the last event it saw. It needs the scope `events:read`, added to your scopes with a
   * description unless you declare it, or `{ scope }`, one of your own declared scopes; `false`
   * serves no feed and adds no scope. A keyhook with no event types has no feed. The feed needs a
   * store with `EventFeedStore` (docs/decisions.md §20.5).
   */
  eventsFeed?: EventsFeedOption;
}

/** `createKeyhook`'s `portal`. */
export interface PortalOptions {
  /**
   * Where the portal is served, as the customer's browser reaches it: the links
   * `portal.createSession` mints are this URL with a token in the fragment. Default
   * `/api/v1/portal`, a path: give the full URL (`https://app.example.com/api/v1/portal`) when
   * the link leaves your own pages.
   */
  url?: string | undefined;
  /**
   * The origins the portal's pages are served from, when a proxy in front of the app changes the
   * `Host` header. Default: a request that changes something must come from its own `Host`.
   */
  origins?: readonly string[] | undefined;
}

/** `createKeyhook`'s `telemetry`: where metrics and spans go, and the opt-in `traceparent` header. */
export interface TelemetryOptions {
  /** Where keyhook's instruments are created; the global meter provider otherwise. */
  meterProvider?: MeterProvider | undefined;
  /** Where keyhook's spans are created; the global tracer provider otherwise. */
  tracerProvider?: TracerProvider | undefined;
  /**
   * Send the W3C `traceparent` header with each delivery: the attempt's span, so a receiver's
   * own spans join the trace. Off by default: a trace id says something about the sender, so
   * turn it on only for receivers inside your organisation.
   */
  traceparent?: boolean | undefined;
}

export interface DeliveryOptions {
  /**
   * Waits after each failed attempt, in ms; its length is the number of retries, at most 12.
   * Default 1m, 5m, 15m, 1h, 3h, 6h, 12h, 24h: nine attempts over about 46 h 21 min.
   */
  retrySchedule?: readonly number[];
  /** One attempt's limit, connect to answer, in ms. Default 10 s. */
  timeoutMs?: number;
  /** Held deliveries (endpoint disabled) fail after this long, in ms. Default 3 days. */
  heldRetentionMs?: number;
  /**
   * Finished deliveries (succeeded or failed), their attempts and their events are deleted this
   * long after they finished, in ms: at least 1 s. Default 30 days. Pending, retrying and held
   * ones are never deleted. An event id can be published again once its event is gone.
   */
  retentionMs?: number;
  /**
   * The names of the two delivery headers: lowercase HTTP header names of your own
   * (`x-acme-signature`). Default `keyhook-signature` and `keyhook-event-id`
   * (docs/decisions.md §6.5). Receivers pass the same names to `@keyhook/webhook-verify`.
   */
  headers?: Partial<DeliveryHeaderNames>;
  /**
   * How an endpoint's deliveries are signed when its create does not say: `'keyhook'` (the
   * default) or `'standard-webhooks'` (docs/decisions.md §6.9). Each endpoint keeps its own; a
   * change here applies to endpoints created after it.
   */
  signatureScheme?: SignatureScheme | undefined;
  /**
   * The delivery rate of an endpoint whose create does not say (`deliveryRate`, docs/decisions.md
   * §8.18): `{ perSecond }`, 0.01 to 1000. Default none. Each endpoint keeps its own; a change
   * here applies to endpoints created after it.
   */
  deliveryRate?: DeliveryRate | null | undefined;
  /**
   * `deliveryRate` under its old name, the same; giving both is a TypeError.
   * @deprecated Use `deliveryRate`.
   */
  endpointRateLimit?: DeliveryRate | null | undefined;
  /**
   * Called when delivery disabled an endpoint, after the change is committed, on the instance
   * whose worker made it: `reason` is `failures` (five consecutive permanent failures) or `gone`
   * (its receiver answered 410 Gone). A PATCH that disables one is the caller's own act and calls
   * nothing.
   */
  onEndpointDisabled?: (webhook: WebhookView, reason: 'failures' | 'gone') => void | Promise<void>;
  /**
   * Called when a delivery failed for good (its last retry failed, or the receiver answered
   * 410 Gone), after it is recorded, on the instance whose worker made the attempt.
   */
  onDeliveryFailed?: (delivery: DeliveryView) => void | Promise<void>;
  /** Name resolution for the sender; the system resolver by default. Every answer is still checked. */
  lookup?: LookupAll;
}

/** One keyhook, typed by its host's scopes and events. `Keyhook` alone is any keyhook. */
export interface Keyhook<out Scope extends string = string, out Catalog extends EventCatalog = EventCatalog> {
  /** The scopes keys may carry, in declaration order. */
  readonly scopes: readonly Scope[];
  /**
   * The customer portal's sessions and JSON API: `portal.createSession(…)` mints a one-time link
   * for one tenant; `@keyhook/portal` serves the pages that use it.
   */
  readonly portal: Portal<Scope>;
  /**
   * The key formats it mints (the first) and accepts, each with a regular expression that finds
   * such a key in text: register it with a secret-scanning program.
   */
  readonly keyFormats: readonly { prefix: string; checksum: boolean; pattern: string }[];
  /** The two delivery header names. */
  readonly headerNames: Readonly<DeliveryHeaderNames>;
  /** Every route `handle` serves, relative to the mount point; adapters register these. */
  readonly routes: readonly RouteDefinition[];
  /**
   * Those routes as the OpenAPI document describes them, mounted at `prefix` (default
   * `/api/v1`): for `openApiDocument`, beside a host's own operations.
   */
  operations(prefix?: string): ApiOperation[];
  /**
   * The event catalog, the one way to read it: each type that may be published and subscribed
   * to, in declaration order, with its description, the JSON Schema of its data and an example,
   * the host's or one made from the schema (docs/decisions.md §8.16). A page shows it (the
   * portal's, or your own); `openApiDocument(info, operations, keyhook)` writes the document's
   * `webhooks` from it.
   */
  eventCatalog(): EventCatalogEntry[];
  /** Adapters stop reading a body past this many bytes and pass `bodyError: 'too_large'`. */
  readonly maxBodyBytes: number;
  /** The byte budget of a list page (`listByteBudget`), for a host's own lists: `pageOf(…, budget)`. */
  readonly listByteBudget: number;
  /** The key rules, for host code (seeding, scripts). */
  readonly keys: ApiKeys;
  /** The webhook endpoint rules, for host code. */
  readonly webhooks: Webhooks;
  /** `events.publish(...)`: an event and its deliveries, in one transaction, typed by the catalog. */
  readonly events: EventPublisher<Catalog>;
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
  /**
   * The data-plane guard, the one way to check a request: `guard(scope)` checks the scope now (a
   * scope outside the declared list throws a TypeError here, at setup, rather than refusing every
   * request later) and returns the check a route runs on each request. That check verifies the
   * bearer key and, if given, its scope, and counts the request against the key's rate limit;
   * `client` is the caller's address, by which failed verifications are limited
   * (`rateLimit.failedAuth`). It answers with the result itself when the key is cached, a promise
   * only when the store must be asked, and never throws: a refusal is a finished response.
   * Adapters' `requireScope` is this guard.
   */
  guard(scope?: Scope): Guard;
  /**
   * Stops the workers it created (attempts in flight finish and are recorded) and waits for
   * background writes. The store stays open: its owner closes it.
   */
  close(): Promise<void>;
}

/** The scope names of a keyhook: `ScopeOf<typeof keyhook>`. */
export type ScopeOf<K> = K extends Keyhook<infer Scope, EventCatalog> ? Scope : never;

/** The event catalog of a keyhook: `EventCatalogOf<typeof keyhook>`. */
export type EventCatalogOf<K> = K extends Keyhook<string, infer Catalog> ? Catalog : never;

/** @deprecated The old name of `EventCatalogOf`. */
export type EventsOf<K> = EventCatalogOf<K>;

/** Type → `data` for every event of a keyhook, for `@keyhook/webhook-verify`: `verify<EventMapOf<typeof keyhook>>(…)`. */
export type EventMapOf<K> = EventMap<EventCatalogOf<K>>;

export function createKeyhook<
  const Scopes extends readonly ScopeInput[] = readonly [],
  const Catalog extends EventCatalog = Record<never, EventDefinition>,
>(options: KeyhookOptions<Scopes, Catalog>): Keyhook<ScopeNameOf<Scopes>, Catalog> {
  // The required options first, in the order a reader meets them: store, adminSession, encryptionKey.
  if (isBlank(options?.store)) throw missingOption('store', HOW_TO_MAKE.store);
  const clock = options.clock ?? systemClock;
  const verifyAdminSession = createAdminSessionVerifier(options.adminSession, clock);
  const eventCatalog = eventCatalogOption(options);
  const hostScopes = new ScopeCatalog(options.scopes);
  const feedPlan = eventsFeedPlan(options.eventsFeed, hostScopes, eventCatalog);
  // The optional capabilities, asked for only where the options use them.
  const feedStore = capabilityOf(options.store, 'eventFeed');
  if (feedPlan && feedStore === null) throw missingCapability('eventFeed');
  const portalStore = capabilityOf(options.store, 'portalSessions');
  if (options.portal !== undefined && portalStore === null) throw missingCapability('portalSessions');
  const scopeCatalog = feedPlan?.adds
    ? new ScopeCatalog([...(options.scopes ?? []), feedPlan.adds])
    : hostScopes;
  const headerNames = deliveryHeaderNames(options.delivery?.headers);
  const defaultSignatureScheme = signatureSchemeOption(options.delivery?.signatureScheme);
  const defaultDeliveryRate = deliveryRateOption(options.delivery);
  const timers = options.timers ?? systemTimers;
  const randomBytes = options.randomBytes ?? cryptoRandomBytes;
  const logger = options.logger ?? consoleLogger;
  const maxBodyBytes = options.adminBodyLimit ?? DEFAULT_ADMIN_BODY_LIMIT;
  const listByteBudget = checkListByteBudget(options.listByteBudget);
  const telemetry = new KeyhookMetrics(options.telemetry?.meterProvider);
  const tracing = new KeyhookTracing(
    options.telemetry?.tracerProvider,
    options.telemetry?.traceparent === true,
  );
  // Read from the store on each collection only; a no-op without a meter provider.
  const unobserveQueue = telemetry.observeQueue(
    () => options.store.countQueuedDeliveries(clock.now()),
    logger,
  );
  const keyFormats = new ApiKeyFormats(options.keyFormat, options.acceptedKeyFormats);
  const keys = new ApiKeyService({
    store: options.store,
    clock,
    randomBytes,
    scopes: scopeCatalog,
    cacheEntries: options.verifiedKeyCacheEntries,
    formats: keyFormats,
  });
  const lastUsed = new LastUsedRecorder(options.store, clock, logger);
  const mode =
    options.mode ??
    (process.env['NODE_ENV']?.trim().toLowerCase() === 'production' ? 'production' : 'development');
  const encryptionKey = isBlank(options.encryptionKey) ? undefined : options.encryptionKey;
  const secrets =
    encryptionKey !== undefined
      ? new SecretBox(encryptionKey, options.previousEncryptionKeys)
      : processSecretBox(mode, options.store, logger);
  const development = mode === 'development';
  const urlPolicy = {
    allowHttp: development,
    allowPrivateAddresses: development,
    ...options.webhookUrlPolicy,
  };
  const workers = new Set<Worker>();
  const wakeWorkers = () => {
    for (const worker of workers) worker.wake();
  };
  const events = new EventService<Catalog>({
    store: options.store,
    catalog: eventCatalog,
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
  const webhooks = new WebhookService({
    store: options.store,
    clock,
    randomBytes,
    secrets,
    urlPolicy,
    events: eventCatalog,
    onEnabled: wakeWorkers,
    defaultSignatureScheme,
    defaultDeliveryRate,
    testEvents: new TestEventSender({
      store: options.store,
      catalog: eventCatalog,
      clock,
      randomBytes,
      prepare: (input, kind) => events.prepare(input, kind),
      onPublished: wakeWorkers,
    }),
  });
  const delivery = options.delivery ?? {};
  const retentionMs = checkRetention(delivery.retentionMs);
  const deliveries = new DeliveryService({ store: options.store, clock, onQueued: wakeWorkers, retentionMs });
  const timeoutMs = delivery.timeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS;
  const retrySchedule = checkRetrySchedule(delivery.retrySchedule);
  const createWorker = (workerOptions?: DeliveryWorkerOptions) => {
    const worker = new Worker(
      {
        store: options.store,
        clock,
        timers,
        randomBytes,
        logger,
        sender: new WebhookSender({ timeoutMs, policy: urlPolicy, lookup: delivery.lookup, headerNames }),
        retry: { schedule: retrySchedule, random: Math.random },
        timeoutMs,
        heldRetentionMs: delivery.heldRetentionMs,
        retentionMs,
        metrics: telemetry,
        tracing,
        signingSecret: (webhook) => webhooks.signingSecret(webhook),
        previousSigningSecret: (webhook) => webhooks.previousSigningSecret(webhook),
        // Neither is awaited: a callback that throws is logged, one that hangs holds nothing.
        onEndpointDisabled: delivery.onEndpointDisabled
          ? (webhook) =>
              delivery.onEndpointDisabled?.(
                toWebhookView(webhook),
                webhook.disabledReason === 'gone' ? 'gone' : 'failures',
              )
          : undefined,
        onDeliveryFailed: delivery.onDeliveryFailed
          ? (failed) => delivery.onDeliveryFailed?.(toDeliveryView(failed))
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
    ...adminKeyRoutes(keys, clock, listByteBudget),
    ...adminWebhookRoutes(webhooks, idempotency, listByteBudget),
    ...adminDeliveryRoutes(deliveries, listByteBudget),
    whoamiRoute,
    ...(feedPlan
      ? [
          feedRoute(
            new EventsFeed({
              store: feedStore!,
              clock,
              catalog: eventCatalog,
              retentionMs,
              listByteBudget,
            }),
            feedPlan.scope,
          ),
        ]
      : []),
  ];
  const rateLimits = new RateLimits(options.rateLimit, (reason) => telemetry.rateLimitRefusal(reason));
  const httpDeps = {
    keys,
    verifyAdminSession,
    lastUsed,
    clock,
    randomBytes,
    logger,
    maxBodyBytes,
    rateLimits,
  };
  const http = createHttpCore({
    ...httpDeps,
    routes,
    onAuthOutcome: (outcome) => telemetry.authOutcome(outcome),
  });
  const portalUrl = options.portal?.url ?? `${DEFAULT_PREFIX}/portal`;
  const portalPath = new URL(portalUrl, 'http://localhost').pathname;
  const portalSessions =
    portalStore &&
    new PortalSessions({ store: portalStore, clock, randomBytes, scopes: scopeCatalog, url: portalUrl });
  const portal = portalSessions
    ? portalApi({
        sessions: portalSessions,
        store: options.store,
        clock,
        scopes: scopeCatalog,
        adminRoutes: routes,
        events: () => eventCatalog.entries(),
        developmentUrls: urlPolicy.allowHttp || urlPolicy.allowPrivateAddresses,
        headers: headerNames,
        secureCookie: !development,
        cookiePath: portalPath,
        origins: options.portal?.origins,
        rateCeiling: (tenantId) => rateLimits.defaultFor(tenantId),
        logger,
      })
    : // A store without portal sessions: the portal's API serves nothing, and minting a link says why.
      { routes: [], authorize: () => Promise.reject(missingCapability('portalSessions')) };
  const withSessions = <T>(use: (sessions: PortalSessions) => Promise<T>): Promise<T> =>
    portalSessions ? use(portalSessions) : Promise.reject(missingCapability('portalSessions'));
  const portalHttp = createHttpCore({
    ...httpDeps,
    routes: portal.routes,
    authorizeAdmin: portal.authorize,
    // The portal's answers hold a customer's data: no cache keeps them, no browser sniffs them.
    everyAnswer: { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' },
  });
  type Scope = ScopeNameOf<Scopes>;
  const guard = (scope?: Scope): Guard => {
    scopeCatalog.assertKnown(scope, 'guard(scope)');
    return (headers: RequestHeaders, client?: string) => http.guard(headers, scope, client);
  };
  return {
    scopes: scopeCatalog.names as readonly Scope[],
    portal: {
      createSession: (input) => withSessions((sessions) => sessions.create(input)),
      revokeSession: (tenantId, sessionId) =>
        withSessions(async (sessions) => (await sessions.revoke(tenantId, sessionId)) > 0),
      revokeSessions: (tenantId) => withSessions((sessions) => sessions.revoke(tenantId, undefined)),
      api: {
        routes: portal.routes.map(({ method, path }) => ({ method, path })),
        maxBodyBytes,
        handle: portalHttp.handle,
        operations: (path = portalPath) =>
          portal.routes.map((route) =>
            toApiOperation(
              route,
              `${path.replace(/\/$/, '')}${route.path}`,
              PORTAL_TAG,
              route.auth === 'admin' ? 'portal' : route.auth,
            ),
          ),
      },
    },
    keyFormats: keyFormats.describe(),
    headerNames,
    eventCatalog: () => eventCatalog.entries(),
    routes: routes.map(({ method, path }) => ({ method, path })),
    operations: (prefix = DEFAULT_PREFIX) =>
      routes.map((route) => toApiOperation(route, `${prefix}${route.path}`, adminTag(route.path))),
    maxBodyBytes,
    listByteBudget,
    keys,
    webhooks,
    events,
    deliveries,
    createWorker,
    store: options.store,
    handle: http.handle,
    guard,
    close: async () => {
      unobserveQueue();
      await Promise.all([...workers].map((worker) => worker.stop()));
      await lastUsed.flush();
    },
  };
}

/** The group the OpenAPI document lists an admin route (or the events feed) under. */
function adminTag(path: string): string {
  if (path.includes('/deliveries') || path.endsWith('/recover')) return 'Deliveries';
  if (path.startsWith('/admin/webhooks')) return 'Webhooks';
  if (path === '/events') return 'Events';
  return 'API keys';
}

/** The portal's routes are one group: a customer's session calls them, from the portal's pages. */
const PORTAL_TAG = 'Customer portal';

/**
 * Without a configured key: refused in production and with any persistent store (a key for this
 * process only would leave its sealed secrets unopenable after a restart); otherwise, with
 * `MemoryStore` in development, a key for this process only, which dies with the data it seals.
 */
function processSecretBox(mode: 'development' | 'production', store: Store, logger: Logger): SecretBox {
  if (mode === 'production' || store.persistent) {
    const why =
      mode === 'production'
        ? 'in production'
        : 'with a persistent store: it keeps its data across restarts, and secrets sealed with a key made up at start could not be opened after one';
    throw missingOption('encryptionKey', HOW_TO_MAKE.encryptionKey, why);
  }
  return new SecretBox(generateEncryptionKey(), [], () =>
    logger.warn(
      {},
      'no encryptionKey: sealing with a key for this process only; it will not open after a restart',
    ),
  );
}
