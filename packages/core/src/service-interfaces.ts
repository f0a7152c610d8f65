import type { EventCatalog } from './catalog/events.js';
import type { DeliveryListFilter, RecoverInput } from './delivery/delivery-service.js';
import type { PublishedEvent, PublishInput, PublishOptions } from './delivery/publish.js';
import type { SentTestEvent, TestEventInput } from './delivery/test-event.js';
import type { KeyGrant } from './keys/key-grant.js';
import type { CreateApiKeyInput, UpdateApiKeyInput } from './keys/key-schemas.js';
import type { ApiKeyRecord, DeliveryDetail, DeliveryRecord, WebhookRecord } from './store/types.js';
import type {
  CreateWebhookInput,
  RotateWebhookOptions,
  UpdateWebhookInput,
} from './webhooks/webhook-schemas.js';

/*
 * The services on a keyhook, as host code sees them. keyhook builds them (createKeyhook); the
 * classes behind them keep their wiring and the hooks the HTTP handler and the worker use to
 * themselves, so those can change without a major release.
 */

/** A key and its secret, as create and rotate return them: the only time the secret is seen. */
export interface IssuedApiKey {
  key: ApiKeyRecord;
  /** The full key (`sk_live_…` by default): show it once, keyhook keeps only its hash. */
  secret: string;
}

/**
 * `keyhook.keys`: the rules of API keys, for host code (seeding, scripts, your own admin UI).
 * They return records, which hold the key's hash: answer a client with `toApiKeyView(record)`.
 */
export interface ApiKeys {
  /**
   * Mints a key. The input is checked as `POST /admin/keys` checks it. With a `grant` (the caps a
   * customer's portal session has), a scope or rate limit past it is refused with `forbidden`.
   */
  create(tenantId: string, input: CreateApiKeyInput, grant?: KeyGrant): Promise<IssuedApiKey>;
  /** The key, or `not_found` (also for another tenant's id). */
  get(tenantId: string, id: string): Promise<ApiKeyRecord>;
  /** Newest first; `before` is the id the previous page ended on. */
  list(tenantId: string, limit: number, before?: string): Promise<ApiKeyRecord[]>;
  /**
   * Changes the key's name or rate limit (`PATCH /admin/keys/{id}`), whatever its status. Under
   * `grant`: a key with scopes it does not hold, or a limit it may not set, is refused.
   */
  update(tenantId: string, id: string, input: UpdateApiKeyInput, grant?: KeyGrant): Promise<ApiKeyRecord>;
  /** A new secret for the same key id; the old one is invalid at once. A key with scopes `grant` does not hold is refused. */
  rotate(tenantId: string, id: string, grant?: KeyGrant): Promise<IssuedApiKey>;
  /** Revokes the key; revoking again changes nothing. A key with scopes `grant` does not hold is refused. */
  revoke(tenantId: string, id: string, grant?: KeyGrant): Promise<ApiKeyRecord>;
  /** The key a presented secret belongs to, or `invalid_api_key`, `key_revoked`, `key_expired`. */
  verify(presented: string): Promise<ApiKeyRecord>;
}

/** An endpoint and its signing secret, as create and rotate return them. */
export interface IssuedWebhook {
  webhook: WebhookRecord;
  /**
   * `whsec_…`: shown once; keyhook keeps it sealed. Null for an ed25519 endpoint, whose secret key
   * is never shown: its receivers verify with `webhook.publicKey`.
   */
  secret: string | null;
}

/**
 * `keyhook.webhooks`: the rules of webhook endpoints, for host code. They return records, which
 * hold the sealed secret: answer a client with `toWebhookView(record)`.
 */
export interface Webhooks {
  /**
   * Registers an endpoint, with the URL policy and the twin rule that the admin route applies.
   * With a shared secret (no `keyType`, or `'hmac'`) the answer's `secret` is that secret.
   */
  create(
    tenantId: string,
    input: CreateWebhookInput & { keyType?: 'hmac' | undefined },
  ): Promise<IssuedWebhook & { secret: string }>;
  create(tenantId: string, input: CreateWebhookInput): Promise<IssuedWebhook>;
  get(tenantId: string, id: string): Promise<WebhookRecord>;
  /** Newest first; `before` is the id the previous page ended on. */
  list(tenantId: string, limit: number, before?: string): Promise<WebhookRecord[]>;
  /** A status change, or a new URL and event set, checked as at create. */
  update(tenantId: string, id: string, input: UpdateWebhookInput): Promise<WebhookRecord>;
  /**
   * A new signing secret. The old one stops signing at once, or with `overlapSeconds` (up to
   * 7 days) signs beside the new one until then. A secret given, or `keyType: 'hmac'`, answers it.
   */
  rotate(
    tenantId: string,
    id: string,
    options: RotateWebhookOptions & ({ keyType: 'hmac' } | { secret: string }),
  ): Promise<IssuedWebhook & { secret: string }>;
  rotate(tenantId: string, id: string, options?: RotateWebhookOptions): Promise<IssuedWebhook>;
  delete(tenantId: string, id: string): Promise<void>;
  /**
   * A test event (`POST /admin/webhooks/{id}/test`): one event of any type of the catalog,
   * whatever the endpoint subscribes to, delivered to this endpoint only (held while it is
   * disabled). `data` is checked by the type's schema as at publish; without it, the type's
   * example is sent (a 400 naming `data` when the type has none). Each call is a new event.
   */
  sendTestEvent(tenantId: string, id: string, input: TestEventInput): Promise<SentTestEvent>;
}

/** `keyhook.events`, typed by your event catalog. */
export interface EventPublisher<Catalog extends EventCatalog = EventCatalog> {
  /**
   * Writes the event and one delivery per subscribed endpoint in one transaction. Idempotent
   * on `id`: the same id with the same type and data returns the first event; with other
   * contents it is refused with `idempotency_conflict`.
   */
  publish<Type extends keyof Catalog & string>(
    input: PublishInput<Catalog, Type>,
    options?: PublishOptions,
  ): Promise<PublishedEvent>;
  /**
   * `publish` inside a synchronous transaction of yours (store-sqlite): written on
   * `transaction`, committed or rolled back with it. Throws rather than rejects. A store that
   * cannot (Postgres: use `publish` with your client) throws a TypeError.
   */
  publishSync<Type extends keyof Catalog & string>(
    input: PublishInput<Catalog, Type>,
    options: { transaction: unknown },
  ): PublishedEvent;
}

/** `keyhook.deliveries`: what the admin delivery routes do, for host code. */
export interface Deliveries {
  /**
   * Newest first. `filter` narrows by state, event type, event id and creation time; a string is a
   * state alone, `null` narrows nothing.
   */
  list(
    tenantId: string,
    webhookId: string,
    limit: number,
    before: string | undefined,
    filter?: DeliveryListFilter | string | null,
  ): Promise<DeliveryRecord[]>;
  /** The delivery with its attempts. */
  get(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail>;
  /** Queues a failed delivery again, due now; held instead while its endpoint is disabled. */
  retry(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryRecord>;
  /**
   * Queues again every failed delivery of the endpoint whose event was published in
   * `[since, until)` (until: default now), each as a retry; returns how many.
   */
  recover(tenantId: string, webhookId: string, input: RecoverInput): Promise<number>;
}

/** A delivery worker from `keyhook.createWorker()`. */
export interface DeliveryWorker {
  readonly started: boolean;
  /** Starts leasing and sending. Starting a started worker does nothing. */
  start(): void;
  /** Something may be due now: lease without waiting for the poll. */
  wake(): void;
  /**
   * Stops leasing, lets the attempts in flight finish and record, then resolves. Deliveries
   * not yet leased stay for the next worker.
   */
  stop(): Promise<void>;
}
