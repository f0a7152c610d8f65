import type { EndpointRateRule } from '../delivery/endpoint-rate.js';
import type { AutoDisableRule } from '../delivery/rules.js';
import type { DeliveryStatus } from '../delivery/states.js';
import type { RateLimit } from '../keys/rate-limit.js';

export type ApiKeyStatus = 'active' | 'revoked';

/** An API key as stored. The plaintext key is never here: only its lookup id and hash. */
export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  /** `<prefix><16 hex>` (`sk_live_…` by default); unique across all tenants. */
  keyLookup: string;
  name: string;
  scopes: string[];
  /** Lowercase hex SHA-256 of the full key. */
  keyHash: string;
  status: ApiKeyStatus;
  expiresAt: Date | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** The key's own rate limit; `null`: the keyhook's default applies, if it has one. */
  rateLimit: RateLimit | null;
  /**
   * The host set `rateLimit` (a caller with no portal grant): a portal session may lower it, never
   * raise or remove it (docs/decisions.md §22.5). False when a session set it, or there is none.
   */
  rateLimitByHost: boolean;
}

/** What `updateApiKey` may change; a field left out keeps its value. */
export interface ApiKeyChanges {
  name?: string;
  /** Sets `rateLimitByHost` with it: to the value given here, false when left out. */
  rateLimit?: RateLimit | null;
  rateLimitByHost?: boolean;
}

export type WebhookStatus = 'active' | 'disabled';
/**
 * Why an endpoint is disabled: a PATCH (`manual`), consecutive permanent failures (`failures`),
 * or its receiver answering 410 Gone (`gone`, docs/decisions.md §10.1).
 */
export type WebhookDisabledReason = 'manual' | 'failures' | 'gone';
/**
 * How an endpoint's deliveries are signed (docs/decisions.md §6.9): keyhook's own
 * `keyhook-signature`, or the Standard Webhooks `webhook-*` headers.
 */
export type SignatureScheme = 'keyhook' | 'standard-webhooks';
/**
 * The most deliveries per second a worker sends to one endpoint, across every instance on one
 * store (docs/decisions.md §8.18); deliveries over it wait, queued, for their slot.
 */
export interface DeliveryRate {
  /** Deliveries per second, 0.01 to 1000; fractions allowed (0.5: one every 2 s). */
  perSecond: number;
}

/**
 * `DeliveryRate` under its old name.
 * @deprecated Use {@link DeliveryRate}.
 */
export type EndpointRateLimit = DeliveryRate;

/** A webhook endpoint as stored. The signing secret is here only sealed (crypto/secret-box.ts). */
export interface WebhookRecord {
  id: string;
  tenantId: string;
  /** The normalised URL (the WHATWG parser's `href`): what is shown and what twins compare. */
  url: string;
  /** Sorted, without duplicates: the event *set*. */
  events: string[];
  /**
   * Lowercase hex SHA-256 of the normalised URL and the event set. Two webhooks of one tenant
   * with the same twinKey are twins; at most one of them may be active
   * (docs/http-api.md §4.3 rule 5).
   */
  twinKey: string;
  status: WebhookStatus;
  disabledReason: WebhookDisabledReason | null;
  /** When the endpoint was disabled, with `disabledReason`; null while it is active. */
  disabledAt: Date | null;
  /** The customer's own words for the endpoint ("Production billing sync"); null: none. */
  description: string | null;
  /** The `whsec_…` signing secret, sealed with the tenant and webhook id as associated data. */
  secretSealed: string;
  /**
   * The secret the last rotation with an overlap replaced, sealed like `secretSealed`: it signs
   * beside the current one until `previousSecretExpiresAt`. Null when there is none.
   */
  previousSecretSealed: string | null;
  /** When `previousSecretSealed` stops signing; null exactly when there is no previous secret. */
  previousSecretExpiresAt: Date | null;
  /** How its deliveries are signed. Rows from before the column was added read `'keyhook'`. */
  signatureScheme: SignatureScheme;
  /** Its delivery rate; null: none. Rows from before the column was added read null. */
  deliveryRate: DeliveryRate | null;
  /**
   * The `whpk_…` public key when the current signing key is an ed25519 one (`whsk_…`, sealed in
   * `secretSealed`); null for a shared secret. Not a secret: reads show it (docs/decisions.md §6.10).
   */
  publicKey: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a webhook listens to, at which URL, and how it is signed (PATCH). */
export interface WebhookSubscription {
  url: string;
  /** Sorted, without duplicates. */
  events: string[];
  twinKey: string;
  /** The twin key the change was computed from: the subscription's version. */
  from: string;
  /** The new signing scheme; undefined keeps the stored one (not a read-then-write). */
  signatureScheme?: SignatureScheme | undefined;
  /**
   * The new delivery rate (null: none); undefined keeps the stored one. A given one, even the
   * same, starts the endpoint's pacing afresh (docs/decisions.md §8.18).
   */
  deliveryRate?: DeliveryRate | null | undefined;
  /** The new description (null: none); undefined keeps the stored one. */
  description?: string | null | undefined;
}

export type WebhookSubscriptionOutcome =
  | WebhookStatusOutcome
  /** The subscription changed since `from` was read: nothing was written. */
  | { outcome: 'stale' };

export type WebhookStatusOutcome =
  | { outcome: 'updated'; webhook: WebhookRecord }
  /** Enabling would make a second active twin: nothing was written. */
  | { outcome: 'active_twin' }
  | { outcome: 'not_found' };

/** One Idempotency-Key of one tenant, from its first claim until it expires. */
export interface IdempotencyRecord {
  tenantId: string;
  key: string;
  /** Lowercase hex SHA-256 of the operation and the canonical JSON body. */
  fingerprint: string;
  /** Random per claim: only the claim that holds the record may complete or release it. */
  claimId: string;
  state: 'in_progress' | 'completed';
  /** The stored response, sealed; null while in progress. */
  responseSealed: string | null;
  createdAt: Date;
  /** An in-progress claim still open at this time belongs to a request that died: it may be taken over. */
  lockedUntil: Date;
  /** The end of the retention window: from then on the record counts as absent, and purge deletes it. */
  expiresAt: Date;
}

export type IdempotencyClaimOutcome =
  | { outcome: 'claimed' }
  /** Another claim holds the key (in progress) or has completed it: the record as it is. */
  | { outcome: 'exists'; record: IdempotencyRecord };

/** Completes a claimed Idempotency-Key in the same transaction as the write it answers for. */
export interface IdempotencyCompletion {
  tenantId: string;
  key: string;
  claimId: string;
  responseSealed: string;
}

/** One published event. Its payload is serialised once, and every attempt sends these bytes. */
export interface EventRecord {
  /** Unique per tenant; publishing an id again writes nothing (publish is idempotent on it). */
  id: string;
  tenantId: string;
  type: string;
  /** The JSON body `{ id, type, createdAt, data }` exactly as it goes on the wire. */
  payload: string;
  createdAt: Date;
  /**
   * The W3C `traceparent` of the span that was active where the event was published, or null
   * when none was: each attempt's span links to it (telemetry/tracing.ts). Never sent as is.
   */
  traceContext: string | null;
}

/** One event on its way to one endpoint. */
export interface DeliveryRecord {
  id: string;
  tenantId: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  /** Attempts finished and recorded. An attempt whose worker died is not counted. */
  attempts: number;
  /**
   * pending and retry_scheduled: when the next attempt is due. in_flight: when the lease runs
   * out and another worker may take the delivery. Null in every other state.
   */
  dueAt: Date | null;
  /** The lease that holds an in_flight delivery; null in every other state. */
  leaseId: string | null;
  /** When the delivery was held (its endpoint disabled); null unless held. */
  heldSince: Date | null;
  lastAttemptAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The log of one finished attempt. */
export interface AttemptRecord {
  deliveryId: string;
  tenantId: string;
  /** 1 for the first attempt. */
  attempt: number;
  startedAt: Date;
  durationMs: number;
  /** The receiver's status, or null when no response came (timeout, refused, DNS, TLS). */
  statusCode: number | null;
  /** Why no response came, or why the response failed; null on success. */
  error: string | null;
  /** At most 4 KiB of the response body, as text. */
  responseBody: string | null;
}

export type PublishOutcome =
  | {
      outcome: 'published';
      event: EventRecord;
      /** Every delivery written, in subscriber (webhook id) order, the leased ones included. */
      deliveries: DeliveryRecord[];
      /** The deliveries leased in the publish itself (`lease`), with what their attempts need. */
      leased: LeasedDelivery[];
    }
  /** The tenant already has an event with this id: nothing was written. The one stored is returned. */
  | { outcome: 'duplicate'; event: EventRecord };

/** Deliveries waiting, store-wide, by where they wait (`countQueuedDeliveries`). */
export interface QueueDepth {
  /** pending or retry_scheduled, and due: waiting for a worker. */
  due: number;
  /** pending or retry_scheduled, due later: retries waiting for their time. */
  scheduled: number;
  /** in_flight: leased to a worker, whose attempt is under way (or whose lease runs out). */
  inFlight: number;
  /** held: their endpoint is disabled. */
  held: number;
}

/** A delivery leased to a worker, with what the attempt needs, read in the same statement. */
export interface LeasedDelivery {
  /** As leased: in_flight, `leaseId` set, `dueAt` the lease's end. */
  delivery: DeliveryRecord;
  event: EventRecord;
  /** The endpoint as it is now: its URL and its current sealed secret. */
  webhook: WebhookRecord;
}

/**
 * A lease taken in the publish itself, for a worker of the publishing process that has room
 * (the handoff): its first attempt needs no lease query and no poll. The deliveries are
 * in_flight under `leaseId` from the start, so a worker that dies before sending loses them to
 * any other worker when the lease runs out, as with any lease.
 */
export interface PublishLease {
  /** At most this many of the new deliveries of active endpoints, in subscriber order. */
  limit: number;
  leaseId: string;
  /** The lease runs out at event.createdAt + leaseMs. */
  leaseMs: number;
}

export interface LeaseRequest {
  now: Date;
  /** At most this many deliveries; 0 leases none (a worker that stops only ends leases: `endLeases`). */
  limit: number;
  /** The lease runs out at now + leaseMs. */
  leaseMs: number;
  /** Written on every leased delivery; only its holder can record the attempt. */
  leaseId: string;
  /** How an endpoint's `deliveryRate` is applied (docs/decisions.md §8.18). Default ENDPOINT_RATE_RULE. */
  rate?: EndpointRateRule | undefined;
  /**
   * Called once, before the claim resolves, when it met a due delivery of an endpoint with a
   * `deliveryRate`: how many such deliveries it made wait for a later slot (not leased, still
   * queued, attempts unchanged), and the earliest time one of those endpoints has a slot again,
   * so the worker wakes then rather than at its poll.
   */
  onRateWait?: ((wait: RateWait) => void) | undefined;
  /**
   * Endpoints (webhook ids) whose due deliveries this claim leaves where they are: the caller's
   * cap on attempts in flight per endpoint is reached for them (docs/decisions.md §8.20). The
   * claim leases the due deliveries of other endpoints behind them, as if these were not due.
   */
  skipEndpoints?: readonly string[] | undefined;
  /**
   * Leases the caller ends before the claim, as if they had run out at `now`: the deliveries stay
   * in flight, due now, for this claim (or any other) to lease again, their attempts unchanged.
   * Without `deliveryId`, every delivery the lease still holds (a claim or a publish whose answer
   * never came: docs/decisions.md §8.4); with it, that delivery only (one the caller could not
   * start in time). A lease that no longer holds a delivery (recorded, or taken) changes nothing.
   */
  endLeases?: readonly EndedLease[] | undefined;
}

/** A lease a caller gives up (LeaseRequest.endLeases). */
export interface EndedLease {
  leaseId: string;
  deliveryId?: string | undefined;
}

/** What a claim tells its caller of the endpoint rates it applied (LeaseRequest.onRateWait). */
export interface RateWait {
  /** Due deliveries the claim gave a later slot instead of a lease. */
  deferred: number;
  /** The earliest next slot of the limited endpoints the claim met. */
  nextSlotAt: Date;
  /**
   * The next slot of each limited endpoint the claim met (nextSlotAt is the earliest), so that a
   * worker wakes for each endpoint's pace, not only the fastest one's.
   */
  nextSlots: readonly Date[];
}

/** What a finished attempt makes of its delivery (core decides it; see delivery/plan.ts). */
export interface AttemptCompletion {
  tenantId: string;
  deliveryId: string;
  leaseId: string;
  attempt: AttemptRecord;
  status: 'succeeded' | 'retry_scheduled' | 'failed';
  /** When the retry is due; null unless status is retry_scheduled. */
  dueAt: Date | null;
  endpointFailures: 'reset' | 'increment' | 'unchanged';
  /**
   * The auto-disable rule as data (core's DELIVERY_RULES.autoDisable): whether an increment
   * disables the endpoint is core's `autoDisables`, and the disable records this reason.
   */
  autoDisable: AutoDisableRule;
  at: Date;
}

export type AttemptCompletionOutcome =
  | {
      outcome: 'recorded';
      delivery: DeliveryRecord;
      /** The endpoint, when this completion disabled it (with `autoDisable.reason`). */
      disabledWebhook: WebhookRecord | null;
    }
  /** The lease ran out and was taken, or the delivery is gone (its webhook deleted): nothing written. */
  | { outcome: 'lease_lost' };

/** An endpoint's delivery log, narrowed: each field left out narrows nothing. */
export interface DeliveryListPage extends ListPage {
  status?: DeliveryStatus | undefined;
  eventType?: string | undefined;
  eventId?: string | undefined;
  /** `createdAt` at or after. */
  createdFrom?: Date | undefined;
  /** `createdAt` before. */
  createdBefore?: Date | undefined;
}

export interface DeliveryDetail {
  delivery: DeliveryRecord;
  event: EventRecord;
  /** Oldest first. */
  attempts: AttemptRecord[];
}

export type RequeueOutcome =
  | { outcome: 'queued'; delivery: DeliveryRecord }
  /** The delivery is in a state the request did not allow: nothing written. */
  | { outcome: 'wrong_state'; delivery: DeliveryRecord }
  | { outcome: 'not_found' };

/** What one purge batch deleted (Store.purgeFinishedDeliveries). */
export interface PurgeOutcome {
  deliveries: number;
  events: number;
  /** Another instance holds the purge: nothing was deleted, try again at the next round. */
  skipped: boolean;
}

/** A portal session (docs/decisions.md §22): a one-time link and, once it is exchanged, the browser session it opened. */
export interface PortalSessionRecord {
  /** `ps_…`. */
  id: string;
  tenantId: string;
  /** Lowercase hex SHA-256 of the one-time link token; unique across all tenants. */
  linkHash: string;
  /** Lowercase hex SHA-256 of the session token; null until the link is exchanged. Unique when set. */
  sessionHash: string | null;
  /** What the session may do (`keys:read`, `keys:write`, `webhooks:read`, `webhooks:write`), sorted. */
  permissions: string[];
  /** The scopes a key created in this session may carry, sorted; null: any scope of the host's. */
  scopes: string[] | null;
  createdAt: Date;
  /** The link and the session it opens both end then. */
  expiresAt: Date;
  /** When the link was exchanged; null before. */
  exchangedAt: Date | null;
  /** When the host revoked it or its holder signed out; null while it stands. */
  revokedAt: Date | null;
}

export type PortalExchangeOutcome =
  | { outcome: 'exchanged'; session: PortalSessionRecord }
  /** Nothing was written. `unknown`: no session has this link. */
  | { outcome: 'refused'; reason: 'unknown' | 'used' | 'expired' | 'revoked' };

/** One webhook's attempts within a window, for its recent success rate. */
export interface AttemptCounts {
  webhookId: string;
  /** Attempts answered with a 2xx. */
  succeeded: number;
  /** Every other attempt: another status, or no answer. */
  failed: number;
}

export type TestEventOutcome =
  | { outcome: 'published'; event: EventRecord; delivery: DeliveryRecord }
  /** The tenant has no webhook with this id: nothing was written. */
  | { outcome: 'not_found' };

/**
 * One page of a tenant's events feed (`listFeedEvents`, docs/decisions.md §8.17). Core decides
 * every value: the page size, the type and the window.
 */
export interface FeedQuery {
  /** The id of the last event the reader got from the feed: the page starts after it. Undefined: from the start. */
  after?: string | undefined;
  /** Only events of this type. */
  type?: string | undefined;
  /** At most this many events. */
  limit: number;
  /** Only events created at or after this: the feed's window (the delivery retention). */
  createdSince: Date;
  /**
   * Bytes of payload the page may hold (core passes its list byte budget, docs/decisions.md §14):
   * the first two events always, then each whose earlier events' payloads total at most this, so
   * the read stops soon after the budget. Undefined: only `limit` counts.
   */
  byteBudget?: number | undefined;
}

/** An event in the feed, with each of its deliveries (one per endpoint it was written for), by webhook id. */
export interface FeedEntry {
  event: EventRecord;
  /** By webhook id. */
  deliveries: DeliveryRecord[];
}

/** What `listFeedEvents` read: the after event as found, and the page. */
export interface FeedPage {
  /**
   * The `after` event as the feed holds it (an event of the tenant that has a feed position:
   * never a test event), whatever its age; null when the query named one the feed does not hold,
   * and then `events` is empty. Undefined when the query named none.
   */
  after: EventRecord | null | undefined;
  /** In feed order, oldest first. */
  events: FeedEntry[];
}

export interface ListPage {
  /** At most this many records. */
  limit: number;
  /** Only records whose id sorts strictly before this one (the previous page's last id). */
  before?: string | undefined;
}

export type RotateOutcome =
  | { outcome: 'rotated'; key: ApiKeyRecord }
  /** The key exists but is revoked, or its hash is no longer the expected one. */
  | { outcome: 'stale'; key: ApiKeyRecord }
  | { outcome: 'not_found' };

/**
 * What keyhook needs from a database, as capabilities (docs/decisions.md §20.5). Every method that
 * takes a tenant id only ever reads or writes that tenant's rows.
 *
 * Stores are dumb and atomic: each method below is one statement or one transaction, never
 * a read and a write across awaits. When the database cannot be reached, a method throws
 * `KeyhookError('unavailable')`.
 *
 * `Store` is what every keyhook needs. The events feed and the portal's sessions are capabilities
 * of their own, asked for only where they are used: `createKeyhook` refuses a store that lacks one
 * the options turn on, naming it.
 */
export interface Store
  extends StoreConnection,
    KeyStore,
    EndpointStore,
    DeliveryQueueStore,
    RetentionStore,
    IdempotencyStore,
    Partial<EventFeedStore>,
    Partial<PortalSessionStore> {}

/** A store with every capability: each store keyhook ships is one. */
export type CompleteStore = Store & EventFeedStore & PortalSessionStore;

/** The connection itself: whether what it stores outlives the process, whether it holds sealed values, and its lifecycle. */
export interface StoreConnection {
  /**
   * True when what it stores outlives this process (a file, a database server). keyhook then
   * refuses to start without a configured `encryptionKey`: a key made up for one process would
   * leave every sealed signing secret unopenable after a restart.
   */
  readonly persistent: boolean;

  /**
   * Whether anything sealed with the master key is stored, in any tenant: a webhook (its
   * signing secret) or a completed Idempotency-Key record (its answer). A host that would make
   * up a new master key asks first: over sealed values, a new key would open none of them.
   */
  holdsSealedValues(): Promise<boolean>;

  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;

  /** Releases connections. The store is unusable afterwards. */
  close(): Promise<void>;
}

/** API keys: their records, lookup by credential, rotation, revocation, and the change version that keeps caches current. */
export interface KeyStore {
  /**
   * Inserts a new key. `keyLookup` is unique across all tenants: when another key already
   * holds it, nothing is written and `'duplicate_lookup'` is returned.
   */
  insertApiKey(record: ApiKeyRecord): Promise<'inserted' | 'duplicate_lookup'>;

  /**
   * The key whose lookup id AND hash both match, in any tenant (verification learns the
   * tenant from it), or null. An unknown lookup id and a wrong hash must cost the same:
   * answer both from one index on (key_lookup, key_hash), without reading a row for either.
   */
  findApiKeyByCredential(keyLookup: string, keyHash: string): Promise<ApiKeyRecord | null>;

  getApiKey(tenantId: string, id: string): Promise<ApiKeyRecord | null>;

  /** The tenant's keys, newest first (ids descending). */
  listApiKeys(tenantId: string, page: ListPage): Promise<ApiKeyRecord[]>;

  /**
   * Compare-and-set of the key hash. It writes `newHash` only while the key is active and
   * its hash is still `expectedHash`. Of concurrent rotations from the same hash exactly
   * one returns `rotated`; every other one returns `stale` with the key as it now is.
   */
  rotateApiKey(tenantId: string, id: string, expectedHash: string, newHash: string): Promise<RotateOutcome>;

  /**
   * Moves an active key to revoked and stamps `revokedAt = at`, atomically. A key that is
   * already revoked is returned unchanged (its first `revokedAt` stays). Once this has
   * returned, every later read on any connection sees the key revoked.
   */
  revokeApiKey(tenantId: string, id: string, at: Date): Promise<ApiKeyRecord | null>;

  /**
   * Writes `changes` to the tenant's key, in one statement, and returns the key as it now is;
   * null when the tenant has no such key. A changed rate limit moves `keyChangeVersion`, as a
   * revoke does, so no instance keeps counting against the old one.
   */
  updateApiKey(tenantId: string, id: string, changes: ApiKeyChanges): Promise<ApiKeyRecord | null>;

  /**
   * Sets `lastUsedAt = at` only when it is null or older than `at - minIntervalMs`, in one
   * conditional write, so concurrent callers write the row at most once per interval.
   * Returns whether it wrote.
   */
  touchApiKey(id: string, at: Date, minIntervalMs: number): Promise<boolean>;

  /**
   * A number that changes whenever a key's verification state (hash, status) may have
   * changed: through this store object at once, and through any other connection, process or
   * app instance within the bound the store documents. Core caches a verified key only
   * under the version it was read at. Called on every verification, so it must be
   * synchronous and cheap (no round trip). `null` means the store cannot tell right now
   * (e.g. its change feed is disconnected): core then caches nothing.
   */
  keyChangeVersion(): number | null;
}

/** Webhook endpoints: their records, status, subscription and signing secrets. */
export interface EndpointStore {
  /**
   * Inserts a webhook. When its status claims its twin key (core's `claimsTwinKey`) and
   * another webhook of the tenant holds that claim, nothing is written and `'active_twin'` is
   * returned: decided atomically (a unique index on the claim, which is the twin key or null),
   * so of N concurrent inserts of active twins exactly one returns `'inserted'`. With `completion`, the insert is
   * made only while that claim still holds its Idempotency-Key in progress, and the key is
   * completed in the same transaction: both are written, or neither. A claim that lost the key
   * (another request took it over after its lock ran out) writes nothing: `'claim_lost'`.
   */
  insertWebhook(
    record: WebhookRecord,
    completion?: IdempotencyCompletion,
  ): Promise<'inserted' | 'active_twin' | 'claim_lost'>;

  getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null>;

  /** The tenant's webhooks, newest first (ids descending). */
  listWebhooks(tenantId: string, page: ListPage): Promise<WebhookRecord[]>;

  /**
   * Sets status and disabledReason and stamps `updatedAt = at`, in one transaction, with the
   * twin claim the status makes (`claimsTwinKey`). Enabling while another webhook of the tenant
   * claims the same twinKey writes nothing and returns `active_twin`, under the same atomic rule
   * as insertWebhook. Setting the status a
   * webhook already has writes nothing and returns it as it is.
   *
   * Deliveries follow in the same transaction (docs/decisions.md §10.2): a status that holds
   * (`holdsDeliveries`) holds the webhook's pending and retry_scheduled deliveries
   * (`DELIVERY_RULES.hold.state`, `heldSince = at`); one that does not releases its held ones
   * (pending, due at `at`) and resets its consecutive-failure count to 0, and its rate's slots
   * (docs/decisions.md §8.18), since the slots given to its held deliveries were given up.
   */
  setWebhookStatus(
    tenantId: string,
    id: string,
    status: WebhookStatus,
    disabledReason: WebhookDisabledReason | null,
    at: Date,
  ): Promise<WebhookStatusOutcome>;

  /**
   * Replaces the URL and the event set, with the twin key they make, and the signature scheme
   * when one is given, and stamps `updatedAt = at`
   * (PATCH), only while the webhook's twin key is still `subscription.from` (compare-and-set: a
   * concurrent change in between gives `'stale'`, and nothing is written). One statement: a
   * webhook that claims its twin key claims the new one instead; when another webhook of the
   * tenant claims it already, nothing is written and `'active_twin'` is returned, decided by the same unique rule as
   * insertWebhook, so of two concurrent changes onto one twin key one wins. Deliveries already
   * written stay with the webhook and go to its URL as it is when they are sent.
   *
   * With `subscription.deliveryRate` given, in the same transaction: the endpoint's rate slots are
   * reset, and its pending and retry_scheduled deliveries that the old rate made wait (due after
   * `at`, no later than the last slot it gave out) become due at `at` (docs/decisions.md §8.18).
   */
  updateWebhookSubscription(
    tenantId: string,
    id: string,
    subscription: WebhookSubscription,
    at: Date,
  ): Promise<WebhookSubscriptionOutcome>;

  /**
   * Replaces the sealed signing secret and its public key (null for a shared secret) and stamps
   * `updatedAt = at`, in one statement; null when there is no such webhook. With `previousExpiresAt`, the secret it replaces becomes the
   * previous one (`previousSecretSealed`, the sealed value as it was) until then; with null,
   * any previous secret is dropped. Only the secret replaced is kept: an older previous one goes.
   */
  rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    publicKey: string | null,
    at: Date,
    previousExpiresAt: Date | null,
  ): Promise<WebhookRecord | null>;

  /**
   * Deletes the webhook, and with it its deliveries and their attempts (docs/decisions.md §10.2:
   * DELETE cancels them); false when the tenant has no such webhook.
   */
  deleteWebhook(tenantId: string, id: string): Promise<boolean>;
}

/** The delivery queue: events written with their deliveries, leased, completed, listed, queued again and watched. */
export interface DeliveryQueueStore {
  /**
   * Writes the event and, in the same transaction, one delivery per webhook of the tenant
   * whose event set holds `event.type`: `pending` and due at `event.createdAt` for an active
   * one, `held` since then for a disabled one. `newDeliveryId` mints each delivery's id. The
   * subscriber set is read under the same lock that setWebhookStatus takes, so a delivery is
   * never left pending on an endpoint that was disabled meanwhile. When the tenant already has
   * an event with this id, nothing is written and `'duplicate'` is returned.
   *
   * `transaction` is the caller's own open transaction, for stores that can join one (the
   * Postgres store takes a pg client inside BEGIN): then every write is made on it and commits
   * or rolls back with the caller's. Stores that cannot join one throw a TypeError when given one.
   *
   * `lease` (never given with `transaction`: a worker must not send what may still roll back)
   * writes the first `lease.limit` deliveries of active endpoints in_flight under
   * `lease.leaseId`, due (the lease's end) at createdAt + leaseMs, and returns them in `leased`
   * with their event and webhook as read under the lock. No other caller can lease them while
   * that lease lives.
   */
  publishEvent(
    event: EventRecord,
    newDeliveryId: () => string,
    transaction?: unknown,
    lease?: PublishLease,
  ): Promise<PublishOutcome>;

  /**
   * publishEvent (without a lease) inside the caller's own synchronous transaction, written
   * before it returns, for stores whose driver is synchronous: the SQLite store takes its own
   * better-sqlite3 connection while a transaction is open on it. A store that cannot join such
   * a transaction (Postgres: every query is a round trip; the memory store: no transactions)
   * throws a TypeError and writes nothing.
   */
  publishEventSync(event: EventRecord, newDeliveryId: () => string, transaction: unknown): PublishOutcome;

  /**
   * One atomic claim of up to `limit` due deliveries of active endpoints, oldest due first:
   * pending or retry_scheduled with `dueAt <= now`, or in_flight with a lease that ran out
   * (`dueAt <= now`). Each becomes in_flight under `leaseId` until now + leaseMs. Two callers
   * never lease the same delivery while its lease lives (Postgres: FOR UPDATE SKIP LOCKED).
   *
   * The due deliveries of an endpoint with a `deliveryRate` are paced by core's `paceEndpoint`
   * (with `request.rate`): one leased only when its slot has come; the others keep their status
   * and attempts and become due at the slots the rule gives them. The endpoint's slots are read and advanced in
   * the claim's transaction, so across every caller on one database the endpoint's leases keep
   * the rule's pace (Postgres: its slot row locked with SKIP LOCKED; a concurrent claim leaves
   * the endpoint to the one that holds it). The `limit` due deliveries considered include the
   * ones made to wait; for each limited endpoint among them, up to `rate.spread` more of its due
   * deliveries (in due order, skipping any another claim holds) are made to wait too.
   */
  leaseDeliveries(request: LeaseRequest): Promise<LeasedDelivery[]>;

  /**
   * Records a finished attempt, only while `leaseId` still holds the delivery, in one
   * transaction: the attempt log; the delivery's new status, dueAt, attempts (+1) and
   * lastAttemptAt; the endpoint's consecutive-failure count (reset, +1 or unchanged). A retry
   * waits where core's `queuedOn` puts it for the endpoint's status by then (held on a disabled
   * one). When core's `autoDisables` says the +1 disables the endpoint, it takes the holding
   * status (`DELIVERY_RULES.hold.endpointStatus`) with `completion.autoDisable.reason`, gives up
   * its twin claim, and its pending and retry_scheduled deliveries are held, in the same
   * transaction.
   */
  completeAttempt(completion: AttemptCompletion): Promise<AttemptCompletionOutcome>;

  /**
   * How many deliveries wait, across every tenant, at `now`: the queue-depth gauge reads it on
   * each collection, so it must be cheap (an index-only count, never a scan of finished rows).
   */
  countQueuedDeliveries(now: Date): Promise<QueueDepth>;

  /** One webhook's deliveries, newest first (ids descending), optionally of one status only. */
  listDeliveries(tenantId: string, webhookId: string, page: DeliveryListPage): Promise<DeliveryRecord[]>;

  /** A delivery of that webhook and tenant with its event and every attempt, or null. */
  getDelivery(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail | null>;

  /**
   * Bulk recovery, one batch: queues again at most `limit` `failed` deliveries of that tenant's
   * webhook whose `createdAt` is in `[since, until)` and whose `updatedAt` (when they failed)
   * is before `failedBefore`, oldest first, as `requeueDelivery` does one (due at `at`; held
   * since `at` when the endpoint is disabled; attempts kept), in one transaction. Returns how
   * many it queued: fewer than `limit` means none is left. `failedBefore` is when the recovery
   * began: a delivery one of its batches queued, that fails again before the next batch, is not
   * queued twice by the same recovery.
   */
  recoverFailedDeliveries(
    tenantId: string,
    webhookId: string,
    since: Date,
    until: Date,
    at: Date,
    limit: number,
    failedBefore: Date,
  ): Promise<number>;

  /**
   * Queues a delivery again, due at `at`, when its status is one of `from`; where core's
   * `queuedOn` puts it for the endpoint's status read under the lock disabling takes (held since
   * `at` on a disabled one). Attempts already made are kept and counted.
   */
  requeueDelivery(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
    from: readonly DeliveryStatus[],
    at: Date,
  ): Promise<RequeueOutcome>;

  /**
   * Calls `listener` when deliveries may have become due through another connection or process
   * (Postgres: LISTEN/NOTIFY, sent by publishEvent and requeue/release inside their
   * transactions, so a listener only hears of committed work). Returns a function that stops
   * it. A store with no such signal returns a no-op; workers then poll.
   */
  watchDeliveries(listener: () => void): () => void;

  /**
   * Writes a test event and one delivery of it, to this webhook only, in one transaction:
   * `pending` and due at `event.createdAt` when the webhook is active, `held` since then when it
   * is disabled, whatever events the webhook subscribes to. Read under the lock publishEvent
   * takes, and announced as publishEvent announces its deliveries (Postgres: NOTIFY).
   */
  publishTestEvent(event: EventRecord, webhookId: string, deliveryId: string): Promise<TestEventOutcome>;

  /**
   * Per webhook of the tenant, the attempts started at or after `since` that succeeded (a 2xx
   * status) and that failed. Webhooks without attempts in the window are left out.
   */
  countRecentAttempts(tenantId: string, since: Date): Promise<AttemptCounts[]>;
}

/** Retention: what is deleted or closed once it is old enough. Core decides when; the store deletes. */
export interface RetentionStore {
  /** Held deliveries with `heldSince <= heldBefore` become failed (`updatedAt = at`); returns how many. */
  expireHeldDeliveries(heldBefore: Date, at: Date): Promise<number>;

  /**
   * Retention, one small batch at a time: deletes at most `limit` finished deliveries
   * (`succeeded` or `failed`) with `updatedAt <= finishedBefore`, with their attempts, then at
   * most `limit` events created at or before `finishedBefore` that no delivery refers to any
   * more. Pending, in-flight, retrying and held deliveries are never deleted. Only one instance
   * purges at a time: a store shared by several answers `skipped` while another holds it. It
   * must not hold locks that a lease or a completion waits on for longer than one batch.
   */
  purgeFinishedDeliveries(finishedBefore: Date, limit: number): Promise<PurgeOutcome>;

  /** Deletes every record with `expiresAt <= now`, in any tenant; returns how many. */
  purgeIdempotencyKeys(now: Date): Promise<number>;
}

/** Idempotency-Key records: a claim, its completion with the answer, its release. */
export interface IdempotencyStore {
  /**
   * Claims an Idempotency-Key; the first writer wins. Atomically: when no record holds
   * (tenantId, key), or the one there has expired (`expiresAt <= now`), or is in progress past
   * its `lockedUntil` (its request died), `record` (state in_progress) takes its place and
   * `'claimed'` is returned. Otherwise nothing is written and the record there is returned.
   * Of N concurrent claims of one free key exactly one returns `'claimed'`.
   */
  claimIdempotencyKey(record: IdempotencyRecord, now: Date): Promise<IdempotencyClaimOutcome>;

  /**
   * Stores the response and marks the record completed, only while `claimId` still holds it
   * in progress. Returns whether it wrote.
   */
  completeIdempotencyKey(completion: IdempotencyCompletion): Promise<boolean>;

  /** Deletes the record only while `claimId` still holds it in progress, so the key can be used again. */
  releaseIdempotencyKey(tenantId: string, key: string, claimId: string): Promise<void>;
}

/** The events feed (`GET /events`): a tenant's events in commit order. A keyhook with `eventsFeed: false` needs none. */
export interface EventFeedStore {
  /**
   * One page of the tenant's events feed (docs/decisions.md §8.17), read in one snapshot: the
   * `after` event, then up to `query.limit` events after it in feed order, each with its
   * deliveries. Feed order is commit order: an event that commits later never takes a place
   * before one already returned, so a reader that pages with `after` misses none and sees none
   * twice (Postgres: positions below the snapshot's xmin only; SQLite: a sequence taken under the
   * write lock; memory: insertion order). Test events (publishTestEvent) have no feed position.
   */
  listFeedEvents(tenantId: string, query: FeedQuery): Promise<FeedPage>;
}

/** The customer portal's sessions. A keyhook that sets no `portal` option and mints no link needs none. */
export interface PortalSessionStore {
  /**
   * Inserts a portal session not yet exchanged. In the same call, deletes every portal session,
   * of any tenant, whose `expiresAt` is before `purgeBefore`, so the table stays bounded.
   */
  insertPortalSession(record: PortalSessionRecord, purgeBefore: Date): Promise<void>;

  /**
   * The link's one exchange, atomically: the session whose `linkHash` matches, when it is not
   * exchanged, not revoked and `expiresAt > now`, takes `sessionHash` and `exchangedAt = now`.
   * Of N concurrent exchanges of one link exactly one returns `exchanged`; the others are
   * refused as `used`. Otherwise nothing is written, and the refusal says why.
   */
  exchangePortalLink(linkHash: string, sessionHash: string, now: Date): Promise<PortalExchangeOutcome>;

  /** The session opened with this session hash, whatever its state (core judges expiry and revocation), or null. */
  findPortalSession(sessionHash: string): Promise<PortalSessionRecord | null>;

  /**
   * Revokes, at `at`, the tenant's session `id` (every session of the tenant when `id` is
   * undefined) that is not revoked yet. Returns how many it revoked.
   */
  revokePortalSessions(tenantId: string, id: string | undefined, at: Date): Promise<number>;
}
