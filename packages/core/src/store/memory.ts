import { ENDPOINT_RATE_RULE, paceEndpoint, type RateSlots, rateWaitOf } from '../delivery/endpoint-rate.js';
import { leasedSubscribers, newDeliveryRecord, queuedOn } from '../delivery/records.js';
import { attemptSucceeded, autoDisables, DELIVERY_RULES, holdsDeliveries } from '../delivery/rules.js';
import { type DeliveryStatus, FINISHED_STATES } from '../delivery/states.js';
import { KeyhookError } from '../errors.js';
import { portalLinkRefusal } from '../portal/link-refusal.js';
import { twinClaimOf } from '../webhooks/webhook-service.js';
import type {
  ApiKeyChanges,
  ApiKeyRecord,
  AttemptCompletion,
  AttemptCompletionOutcome,
  AttemptCounts,
  AttemptRecord,
  CompleteStore,
  DeliveryDetail,
  DeliveryListPage,
  DeliveryRecord,
  EventRecord,
  FeedPage,
  FeedQuery,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyRecord,
  LeasedDelivery,
  LeaseRequest,
  ListPage,
  PortalExchangeOutcome,
  PortalSessionRecord,
  PublishLease,
  PublishOutcome,
  PurgeOutcome,
  QueueDepth,
  RequeueOutcome,
  RotateOutcome,
  TestEventOutcome,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
  WebhookSubscription,
  WebhookSubscriptionOutcome,
} from './types.js';

const { hold } = DELIVERY_RULES;

const date = (value: Date | null) => (value ? new Date(value.getTime()) : null);

// Callers get their own copy, so nothing outside can change what the store holds.
const copy = (record: ApiKeyRecord): ApiKeyRecord => ({
  ...record,
  scopes: [...record.scopes],
  expiresAt: date(record.expiresAt),
  createdAt: new Date(record.createdAt.getTime()),
  lastUsedAt: date(record.lastUsedAt),
  revokedAt: date(record.revokedAt),
  rateLimit: record.rateLimit ? { ...record.rateLimit } : null,
});

const copyWebhook = (record: WebhookRecord): WebhookRecord => ({
  ...record,
  deliveryRate: record.deliveryRate ? { ...record.deliveryRate } : null,
  previousSecretExpiresAt: date(record.previousSecretExpiresAt),
  events: [...record.events],
  createdAt: new Date(record.createdAt.getTime()),
  updatedAt: new Date(record.updatedAt.getTime()),
});

const copyIdempotency = (record: IdempotencyRecord): IdempotencyRecord => ({
  ...record,
  createdAt: new Date(record.createdAt.getTime()),
  lockedUntil: new Date(record.lockedUntil.getTime()),
  expiresAt: new Date(record.expiresAt.getTime()),
});

const copyEvent = (record: EventRecord): EventRecord => ({
  ...record,
  createdAt: new Date(record.createdAt.getTime()),
});

const copyDelivery = (record: DeliveryRecord): DeliveryRecord => ({
  ...record,
  dueAt: date(record.dueAt),
  heldSince: date(record.heldSince),
  lastAttemptAt: date(record.lastAttemptAt),
  createdAt: new Date(record.createdAt.getTime()),
  updatedAt: new Date(record.updatedAt.getTime()),
});

const copyPortalSession = (record: PortalSessionRecord): PortalSessionRecord => ({
  ...record,
  permissions: [...record.permissions],
  scopes: record.scopes ? [...record.scopes] : null,
  createdAt: new Date(record.createdAt.getTime()),
  expiresAt: new Date(record.expiresAt.getTime()),
  exchangedAt: date(record.exchangedAt),
  revokedAt: date(record.revokedAt),
});

const copyAttempt = (record: AttemptRecord): AttemptRecord => ({
  ...record,
  startedAt: new Date(record.startedAt.getTime()),
});

const sameLimit = (a: ApiKeyRecord['rateLimit'], b: ApiKeyRecord['rateLimit']) =>
  a === b || (a !== null && b !== null && a.limit === b.limit && a.window === b.window);

const newestFirst = (a: { id: string }, b: { id: string }) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * The reference store: every rule of the Store contract in plain maps. Each method does its
 * reads and writes synchronously, before its first await, which makes it atomic in one
 * process. For tests and single-process trials; nothing survives a restart.
 */
export class MemoryStore implements CompleteStore {
  readonly persistent = false;
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly idByLookup = new Map<string, string>();
  private readonly webhooks = new Map<string, WebhookRecord>();
  private readonly idempotency = new Map<string, IdempotencyRecord>();
  private readonly events = new Map<string, EventRecord>();
  /** The events feed's positions (docs/decisions.md §8.17): insertion order; test events have none. */
  private readonly feedPositions = new Map<string, number>();
  private lastFeedPosition = 0;
  private readonly deliveries = new Map<string, DeliveryRecord>();
  private readonly attempts = new Map<string, AttemptRecord[]>();
  private readonly consecutiveFailures = new Map<string, number>();
  /** Each limited endpoint's rate slots (docs/decisions.md §8.18), by webhook id. */
  private readonly rates = new Map<string, RateSlots>();
  private readonly portalSessions = new Map<string, PortalSessionRecord>();
  private closed = false;
  private changes = 0;

  async insertApiKey(record: ApiKeyRecord): Promise<'inserted' | 'duplicate_lookup'> {
    this.assertOpen();
    if (this.idByLookup.has(record.keyLookup) || this.keys.has(record.id)) return 'duplicate_lookup';
    this.keys.set(record.id, copy(record));
    this.idByLookup.set(record.keyLookup, record.id);
    return 'inserted';
  }

  async findApiKeyByCredential(keyLookup: string, keyHash: string): Promise<ApiKeyRecord | null> {
    this.assertOpen();
    const id = this.idByLookup.get(keyLookup);
    const record = id === undefined ? undefined : this.keys.get(id);
    return record && record.keyHash === keyHash ? copy(record) : null;
  }

  async getApiKey(tenantId: string, id: string): Promise<ApiKeyRecord | null> {
    this.assertOpen();
    const record = this.owned(tenantId, id);
    return record ? copy(record) : null;
  }

  async listApiKeys(tenantId: string, page: ListPage): Promise<ApiKeyRecord[]> {
    this.assertOpen();
    const before = page.before;
    return [...this.keys.values()]
      .filter((k) => k.tenantId === tenantId && (before === undefined || k.id < before))
      .sort(newestFirst)
      .slice(0, page.limit)
      .map(copy);
  }

  async rotateApiKey(
    tenantId: string,
    id: string,
    expectedHash: string,
    newHash: string,
  ): Promise<RotateOutcome> {
    this.assertOpen();
    const record = this.owned(tenantId, id);
    if (!record) return { outcome: 'not_found' };
    if (record.status !== 'active' || record.keyHash !== expectedHash)
      return { outcome: 'stale', key: copy(record) };
    record.keyHash = newHash;
    this.changes++;
    return { outcome: 'rotated', key: copy(record) };
  }

  async revokeApiKey(tenantId: string, id: string, at: Date): Promise<ApiKeyRecord | null> {
    this.assertOpen();
    const record = this.owned(tenantId, id);
    if (!record) return null;
    if (record.status === 'active') {
      record.status = 'revoked';
      record.revokedAt = new Date(at);
      this.changes++;
    }
    return copy(record);
  }

  async updateApiKey(tenantId: string, id: string, changes: ApiKeyChanges): Promise<ApiKeyRecord | null> {
    this.assertOpen();
    const record = this.owned(tenantId, id);
    if (!record) return null;
    if (changes.name !== undefined) record.name = changes.name;
    const limit = changes.rateLimit;
    if (limit !== undefined) record.rateLimitByHost = changes.rateLimitByHost === true;
    if (limit !== undefined && !sameLimit(record.rateLimit, limit)) {
      record.rateLimit = limit ? { ...limit } : null;
      this.changes++;
    }
    return copy(record);
  }

  async touchApiKey(id: string, at: Date, minIntervalMs: number): Promise<boolean> {
    this.assertOpen();
    const record = this.keys.get(id);
    if (!record) return false;
    if (record.lastUsedAt && record.lastUsedAt.getTime() > at.getTime() - minIntervalMs) return false;
    record.lastUsedAt = new Date(at);
    return true;
  }

  async insertWebhook(
    record: WebhookRecord,
    completion?: IdempotencyCompletion,
  ): Promise<'inserted' | 'active_twin' | 'claim_lost'> {
    this.assertOpen();
    if (completion && !this.holds(completion)) return 'claim_lost';
    if (this.claimTaken(record, twinClaimOf(record))) return 'active_twin';
    this.webhooks.set(record.id, copyWebhook(record));
    if (completion) this.complete(completion);
    return 'inserted';
  }

  async getWebhook(tenantId: string, id: string): Promise<WebhookRecord | null> {
    this.assertOpen();
    const record = this.ownedWebhook(tenantId, id);
    return record ? copyWebhook(record) : null;
  }

  async listWebhooks(tenantId: string, page: ListPage): Promise<WebhookRecord[]> {
    this.assertOpen();
    const before = page.before;
    return [...this.webhooks.values()]
      .filter((w) => w.tenantId === tenantId && (before === undefined || w.id < before))
      .sort(newestFirst)
      .slice(0, page.limit)
      .map(copyWebhook);
  }

  async setWebhookStatus(
    tenantId: string,
    id: string,
    status: WebhookStatus,
    disabledReason: WebhookDisabledReason | null,
    at: Date,
  ): Promise<WebhookStatusOutcome> {
    this.assertOpen();
    const record = this.ownedWebhook(tenantId, id);
    if (!record) return { outcome: 'not_found' };
    if (record.status === status) return { outcome: 'updated', webhook: copyWebhook(record) };
    if (this.claimTaken(record, twinClaimOf({ status, twinKey: record.twinKey }))) {
      return { outcome: 'active_twin' };
    }
    record.status = status;
    record.disabledReason = disabledReason;
    record.disabledAt = disabledReason === null ? null : new Date(at);
    record.updatedAt = new Date(at);
    if (holdsDeliveries(status)) this.holdDeliveries(id, at);
    else this.releaseDeliveries(id, at);
    return { outcome: 'updated', webhook: copyWebhook(record) };
  }

  async updateWebhookSubscription(
    tenantId: string,
    id: string,
    subscription: WebhookSubscription,
    at: Date,
  ): Promise<WebhookSubscriptionOutcome> {
    this.assertOpen();
    const record = this.ownedWebhook(tenantId, id);
    if (!record) return { outcome: 'not_found' };
    if (record.twinKey !== subscription.from) return { outcome: 'stale' };
    // A webhook that claims its twin key claims the new one instead (as the SQL stores carry it).
    if (twinClaimOf(record) !== null && this.claimTaken(record, subscription.twinKey)) {
      return { outcome: 'active_twin' };
    }
    record.url = subscription.url;
    record.events = [...subscription.events];
    record.twinKey = subscription.twinKey;
    if (subscription.signatureScheme !== undefined) record.signatureScheme = subscription.signatureScheme;
    if (subscription.description !== undefined) record.description = subscription.description;
    if (subscription.deliveryRate !== undefined) {
      record.deliveryRate = subscription.deliveryRate ? { ...subscription.deliveryRate } : null;
      this.resetRate(id, at);
    }
    record.updatedAt = new Date(at);
    return { outcome: 'updated', webhook: copyWebhook(record) };
  }

  async rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    publicKey: string | null,
    at: Date,
    previousExpiresAt: Date | null,
  ): Promise<WebhookRecord | null> {
    this.assertOpen();
    const record = this.ownedWebhook(tenantId, id);
    if (!record) return null;
    record.previousSecretSealed = previousExpiresAt ? record.secretSealed : null;
    record.previousSecretExpiresAt = previousExpiresAt ? new Date(previousExpiresAt) : null;
    record.secretSealed = secretSealed;
    record.publicKey = publicKey;
    record.updatedAt = new Date(at);
    return copyWebhook(record);
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    this.assertOpen();
    if (!this.ownedWebhook(tenantId, id)) return false;
    for (const delivery of this.deliveries.values()) {
      if (delivery.webhookId !== id) continue;
      this.deliveries.delete(delivery.id);
      this.attempts.delete(delivery.id);
    }
    this.consecutiveFailures.delete(id);
    this.rates.delete(id);
    return this.webhooks.delete(id);
  }

  async publishEvent(
    event: EventRecord,
    newDeliveryId: () => string,
    transaction?: unknown,
    lease?: PublishLease,
  ): Promise<PublishOutcome> {
    this.assertOpen();
    if (transaction !== undefined) throw new TypeError('keyhook: the memory store cannot join a transaction');
    const slot = eventSlot(event.tenantId, event.id);
    const existing = this.events.get(slot);
    if (existing) return { outcome: 'duplicate', event: copyEvent(existing) };
    this.events.set(slot, copyEvent(event));
    this.feedPositions.set(slot, ++this.lastFeedPosition);
    const subscribers = [...this.webhooks.values()]
      .filter((webhook) => webhook.tenantId === event.tenantId && webhook.events.includes(event.type))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const toLease = leasedSubscribers(subscribers, lease);
    const deliveries: DeliveryRecord[] = [];
    const leased: LeasedDelivery[] = [];
    for (const webhook of subscribers) {
      const delivery = newDeliveryRecord(
        event,
        webhook,
        newDeliveryId(),
        toLease.has(webhook) ? lease : undefined,
      );
      this.deliveries.set(delivery.id, copyDelivery(delivery));
      deliveries.push(copyDelivery(delivery));
      if (toLease.has(webhook)) {
        leased.push({
          delivery: copyDelivery(delivery),
          event: copyEvent(event),
          webhook: copyWebhook(webhook),
        });
      }
    }
    return { outcome: 'published', event: copyEvent(event), deliveries, leased };
  }

  publishEventSync(_event: EventRecord, _newDeliveryId: () => string, _transaction: unknown): PublishOutcome {
    throw new TypeError('keyhook: the memory store has no transactions to join; use publish');
  }

  async leaseDeliveries(request: LeaseRequest): Promise<LeasedDelivery[]> {
    this.assertOpen();
    const now = request.now.getTime();
    for (const ended of request.endLeases ?? []) {
      for (const delivery of this.deliveries.values()) {
        if (
          delivery.status === 'in_flight' &&
          delivery.leaseId === ended.leaseId &&
          (ended.deliveryId === undefined || delivery.id === ended.deliveryId) &&
          delivery.dueAt!.getTime() > now
        ) {
          delivery.dueAt = new Date(now);
        }
      }
    }
    const skipped = new Set(request.skipEndpoints);
    const due = [...this.deliveries.values()]
      .filter(
        (d) =>
          LEASABLE.includes(d.status) &&
          d.dueAt !== null &&
          d.dueAt.getTime() <= now &&
          !skipped.has(d.webhookId) &&
          !holdsDeliveries(this.webhooks.get(d.webhookId)!.status),
      )
      .sort(dueOrder)
      .slice(0, request.limit);
    const rule = request.rate ?? ENDPOINT_RATE_RULE;
    // docs/decisions.md §8.18: each limited endpoint's due deliveries, in due order, paced at once.
    const limited = new Map<string, DeliveryRecord[]>();
    for (const delivery of due) {
      if (this.webhooks.get(delivery.webhookId)!.deliveryRate === null) continue;
      limited.set(delivery.webhookId, [...(limited.get(delivery.webhookId) ?? []), delivery]);
    }
    // Up to `spread` more due deliveries of each, beyond the limit, are given their slots too.
    const met = new Set(due);
    for (const [webhookId, deliveries] of limited) {
      const more = [...this.deliveries.values()]
        .filter(
          (d) =>
            d.webhookId === webhookId &&
            !met.has(d) &&
            LEASABLE.includes(d.status) &&
            d.dueAt !== null &&
            d.dueAt.getTime() <= now,
        )
        .sort(dueOrder)
        .slice(0, rule.spread);
      deliveries.push(...more);
    }
    const refused = new Set<DeliveryRecord>();
    const nextSlots: number[] = [];
    for (const [webhookId, deliveries] of limited) {
      const slots = this.rateSlots(webhookId);
      const limit = this.webhooks.get(webhookId)!.deliveryRate!;
      const waitingAt = (dueAt: number) =>
        [...this.deliveries.values()].some(
          (d) =>
            d.webhookId === webhookId &&
            (d.status === 'pending' || d.status === 'retry_scheduled') &&
            d.dueAt?.getTime() === dueAt,
        );
      paceEndpoint(slots, limit, now, rule, deliveries.length, waitingAt).forEach((decision, i) => {
        if (decision.lease) return;
        const delivery = deliveries[i]!;
        refused.add(delivery);
        delivery.dueAt = new Date(decision.dueAt);
        delivery.updatedAt = new Date(now);
      });
      nextSlots.push(slots.nextAt ?? now);
    }
    if (limited.size > 0) request.onRateWait?.(rateWaitOf(refused.size, nextSlots));
    const leased = due.filter((delivery) => !refused.has(delivery));
    return leased.map((delivery) => {
      delivery.status = 'in_flight';
      delivery.leaseId = request.leaseId;
      delivery.dueAt = new Date(now + request.leaseMs);
      delivery.updatedAt = new Date(now);
      return {
        delivery: copyDelivery(delivery),
        event: copyEvent(this.events.get(eventSlot(delivery.tenantId, delivery.eventId))!),
        webhook: copyWebhook(this.webhooks.get(delivery.webhookId)!),
      };
    });
  }

  async completeAttempt(completion: AttemptCompletion): Promise<AttemptCompletionOutcome> {
    this.assertOpen();
    const delivery = this.deliveries.get(completion.deliveryId);
    if (
      !delivery ||
      delivery.tenantId !== completion.tenantId ||
      delivery.status !== 'in_flight' ||
      delivery.leaseId !== completion.leaseId
    ) {
      return { outcome: 'lease_lost' };
    }
    const webhook = this.webhooks.get(delivery.webhookId)!;
    const at = new Date(completion.at);
    const log = this.attempts.get(delivery.id) ?? [];
    log.push(copyAttempt(completion.attempt));
    this.attempts.set(delivery.id, log);
    delivery.attempts += 1;
    delivery.lastAttemptAt = new Date(completion.attempt.startedAt);
    delivery.leaseId = null;
    delivery.updatedAt = at;
    if (completion.status === 'retry_scheduled') {
      Object.assign(delivery, queuedOn(webhook.status, completion.status, date(completion.dueAt), at));
    } else {
      delivery.status = completion.status;
      delivery.dueAt = null;
    }
    let disabledWebhook: WebhookRecord | null = null;
    if (completion.endpointFailures === 'reset') this.consecutiveFailures.set(webhook.id, 0);
    if (completion.endpointFailures === 'increment') {
      const count = (this.consecutiveFailures.get(webhook.id) ?? 0) + 1;
      this.consecutiveFailures.set(webhook.id, count);
      if (autoDisables(count, webhook.status, completion.autoDisable)) {
        webhook.status = hold.endpointStatus;
        webhook.disabledReason = completion.autoDisable.reason;
        webhook.disabledAt = new Date(at);
        webhook.updatedAt = at;
        this.holdDeliveries(webhook.id, at);
        disabledWebhook = copyWebhook(webhook);
      }
    }
    return { outcome: 'recorded', delivery: copyDelivery(delivery), disabledWebhook };
  }

  async countQueuedDeliveries(now: Date): Promise<QueueDepth> {
    this.assertOpen();
    const depth: QueueDepth = { due: 0, scheduled: 0, inFlight: 0, held: 0 };
    for (const delivery of this.deliveries.values()) {
      if (delivery.status === 'in_flight') depth.inFlight++;
      else if (delivery.status === hold.state) depth.held++;
      else if (delivery.dueAt !== null) {
        if (delivery.dueAt.getTime() <= now.getTime()) depth.due++;
        else depth.scheduled++;
      }
    }
    return depth;
  }

  async expireHeldDeliveries(heldBefore: Date, at: Date): Promise<number> {
    this.assertOpen();
    let expired = 0;
    for (const delivery of this.deliveries.values()) {
      if (delivery.status !== hold.state || delivery.heldSince!.getTime() > heldBefore.getTime()) continue;
      delivery.status = 'failed';
      delivery.heldSince = null;
      delivery.updatedAt = new Date(at);
      expired++;
    }
    return expired;
  }

  async purgeFinishedDeliveries(finishedBefore: Date, limit: number): Promise<PurgeOutcome> {
    this.assertOpen();
    const cutoff = finishedBefore.getTime();
    let deliveries = 0;
    for (const [id, delivery] of this.deliveries) {
      if (deliveries >= limit) break;
      if (!FINISHED_STATES.includes(delivery.status) || delivery.updatedAt.getTime() > cutoff) continue;
      this.deliveries.delete(id);
      this.attempts.delete(id);
      deliveries++;
    }
    const referenced = new Set([...this.deliveries.values()].map((d) => eventSlot(d.tenantId, d.eventId)));
    let events = 0;
    for (const [slot, event] of this.events) {
      if (events >= limit) break;
      if (referenced.has(slot) || event.createdAt.getTime() > cutoff) continue;
      this.events.delete(slot);
      this.feedPositions.delete(slot);
      events++;
    }
    return { deliveries, events, skipped: false };
  }

  async listDeliveries(
    tenantId: string,
    webhookId: string,
    page: DeliveryListPage,
  ): Promise<DeliveryRecord[]> {
    this.assertOpen();
    const { before, status, eventType, eventId, createdFrom, createdBefore } = page;
    return [...this.deliveries.values()]
      .filter(
        (d) =>
          d.tenantId === tenantId &&
          d.webhookId === webhookId &&
          (status === undefined || d.status === status) &&
          (eventType === undefined || d.eventType === eventType) &&
          (eventId === undefined || d.eventId === eventId) &&
          (createdFrom === undefined || d.createdAt.getTime() >= createdFrom.getTime()) &&
          (createdBefore === undefined || d.createdAt.getTime() < createdBefore.getTime()) &&
          (before === undefined || d.id < before),
      )
      .sort(newestFirst)
      .slice(0, page.limit)
      .map(copyDelivery);
  }

  async getDelivery(tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryDetail | null> {
    this.assertOpen();
    const delivery = this.ownedDelivery(tenantId, webhookId, deliveryId);
    if (!delivery) return null;
    return {
      delivery: copyDelivery(delivery),
      event: copyEvent(this.events.get(eventSlot(tenantId, delivery.eventId))!),
      attempts: (this.attempts.get(deliveryId) ?? []).map(copyAttempt),
    };
  }

  async requeueDelivery(
    tenantId: string,
    webhookId: string,
    deliveryId: string,
    from: readonly DeliveryStatus[],
    at: Date,
  ): Promise<RequeueOutcome> {
    this.assertOpen();
    const delivery = this.ownedDelivery(tenantId, webhookId, deliveryId);
    if (!delivery) return { outcome: 'not_found' };
    if (!from.includes(delivery.status)) return { outcome: 'wrong_state', delivery: copyDelivery(delivery) };
    Object.assign(
      delivery,
      queuedOn(this.webhooks.get(webhookId)!.status, 'pending', new Date(at), new Date(at)),
    );
    delivery.leaseId = null;
    delivery.updatedAt = new Date(at);
    return { outcome: 'queued', delivery: copyDelivery(delivery) };
  }

  async recoverFailedDeliveries(
    tenantId: string,
    webhookId: string,
    since: Date,
    until: Date,
    at: Date,
    limit: number,
    failedBefore: Date,
  ): Promise<number> {
    this.assertOpen();
    const webhook = this.webhooks.get(webhookId);
    if (!webhook || webhook.tenantId !== tenantId) return 0;
    const due = [...this.deliveries.values()]
      .filter(
        (d) =>
          d.webhookId === webhookId &&
          d.tenantId === tenantId &&
          d.status === 'failed' &&
          d.updatedAt.getTime() < failedBefore.getTime() &&
          d.createdAt.getTime() >= since.getTime() &&
          d.createdAt.getTime() < until.getTime(),
      )
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))
      .slice(0, limit);
    for (const delivery of due) {
      Object.assign(delivery, queuedOn(webhook.status, 'pending', new Date(at), new Date(at)));
      delivery.leaseId = null;
      delivery.updatedAt = new Date(at);
    }
    return due.length;
  }

  async publishTestEvent(
    event: EventRecord,
    webhookId: string,
    deliveryId: string,
  ): Promise<TestEventOutcome> {
    this.assertOpen();
    const webhook = this.webhooks.get(webhookId);
    if (!webhook || webhook.tenantId !== event.tenantId) return { outcome: 'not_found' };
    this.events.set(eventSlot(event.tenantId, event.id), copyEvent(event));
    const delivery = newDeliveryRecord(event, webhook, deliveryId, undefined);
    this.deliveries.set(delivery.id, copyDelivery(delivery));
    return { outcome: 'published', event: copyEvent(event), delivery: copyDelivery(delivery) };
  }

  async listFeedEvents(tenantId: string, query: FeedQuery): Promise<FeedPage> {
    this.assertOpen();
    let from = 0;
    let after: EventRecord | null | undefined;
    if (query.after !== undefined) {
      const slot = eventSlot(tenantId, query.after);
      const position = this.feedPositions.get(slot);
      if (position === undefined) return { after: null, events: [] };
      from = position;
      after = copyEvent(this.events.get(slot)!);
    }
    const page = [...this.feedPositions]
      .filter(([, position]) => position > from)
      .sort(([, a], [, b]) => a - b)
      .map(([slot]) => this.events.get(slot)!)
      .filter(
        (event) =>
          event.tenantId === tenantId &&
          (query.type === undefined || event.type === query.type) &&
          event.createdAt.getTime() >= query.createdSince.getTime(),
      )
      .slice(0, query.limit)
      .filter(withinFeedBudget(query.byteBudget));
    const events = page.map((event) => ({
      event: copyEvent(event),
      deliveries: [...this.deliveries.values()]
        .filter((delivery) => delivery.tenantId === tenantId && delivery.eventId === event.id)
        .sort((a, b) => (a.webhookId < b.webhookId ? -1 : 1))
        .map(copyDelivery),
    }));
    return { after, events };
  }

  async countRecentAttempts(tenantId: string, since: Date): Promise<AttemptCounts[]> {
    this.assertOpen();
    const counts = new Map<string, AttemptCounts>();
    for (const [deliveryId, attempts] of this.attempts) {
      const delivery = this.deliveries.get(deliveryId);
      if (!delivery || delivery.tenantId !== tenantId) continue;
      for (const attempt of attempts) {
        if (attempt.startedAt.getTime() < since.getTime()) continue;
        const entry = counts.get(delivery.webhookId) ?? {
          webhookId: delivery.webhookId,
          succeeded: 0,
          failed: 0,
        };
        if (attemptSucceeded(attempt.statusCode)) entry.succeeded++;
        else entry.failed++;
        counts.set(delivery.webhookId, entry);
      }
    }
    return [...counts.values()].sort((a, b) => (a.webhookId < b.webhookId ? -1 : 1));
  }

  async insertPortalSession(record: PortalSessionRecord, purgeBefore: Date): Promise<void> {
    this.assertOpen();
    for (const [id, session] of this.portalSessions) {
      if (session.expiresAt.getTime() < purgeBefore.getTime()) this.portalSessions.delete(id);
    }
    this.portalSessions.set(record.id, copyPortalSession(record));
  }

  async exchangePortalLink(linkHash: string, sessionHash: string, now: Date): Promise<PortalExchangeOutcome> {
    this.assertOpen();
    const session = [...this.portalSessions.values()].find((candidate) => candidate.linkHash === linkHash);
    const refusal = portalLinkRefusal(session ?? null, now);
    if (refusal !== null || !session) return { outcome: 'refused', reason: refusal ?? 'unknown' };
    session.sessionHash = sessionHash;
    session.exchangedAt = new Date(now.getTime());
    return { outcome: 'exchanged', session: copyPortalSession(session) };
  }

  async findPortalSession(sessionHash: string): Promise<PortalSessionRecord | null> {
    this.assertOpen();
    const session = [...this.portalSessions.values()].find(
      (candidate) => candidate.sessionHash === sessionHash,
    );
    return session ? copyPortalSession(session) : null;
  }

  async revokePortalSessions(tenantId: string, id: string | undefined, at: Date): Promise<number> {
    this.assertOpen();
    let revoked = 0;
    for (const session of this.portalSessions.values()) {
      if (session.tenantId !== tenantId || session.revokedAt !== null) continue;
      if (id !== undefined && session.id !== id) continue;
      session.revokedAt = new Date(at.getTime());
      revoked++;
    }
    return revoked;
  }

  watchDeliveries(_listener: () => void): () => void {
    // One process: core wakes its own workers; there is no one else to hear from.
    return () => {};
  }

  async claimIdempotencyKey(record: IdempotencyRecord, now: Date): Promise<IdempotencyClaimOutcome> {
    this.assertOpen();
    const slot = idempotencySlot(record.tenantId, record.key);
    const existing = this.idempotency.get(slot);
    const free =
      !existing ||
      existing.expiresAt.getTime() <= now.getTime() ||
      (existing.state === 'in_progress' && existing.lockedUntil.getTime() <= now.getTime());
    if (!free) return { outcome: 'exists', record: copyIdempotency(existing) };
    this.idempotency.set(slot, copyIdempotency({ ...record, state: 'in_progress', responseSealed: null }));
    return { outcome: 'claimed' };
  }

  async completeIdempotencyKey(completion: IdempotencyCompletion): Promise<boolean> {
    this.assertOpen();
    return this.complete(completion);
  }

  async releaseIdempotencyKey(tenantId: string, key: string, claimId: string): Promise<void> {
    this.assertOpen();
    const slot = idempotencySlot(tenantId, key);
    const record = this.idempotency.get(slot);
    if (record && record.claimId === claimId && record.state === 'in_progress') this.idempotency.delete(slot);
  }

  async holdsSealedValues(): Promise<boolean> {
    this.assertOpen();
    if (this.webhooks.size > 0) return true;
    for (const record of this.idempotency.values()) if (record.responseSealed !== null) return true;
    return false;
  }

  async purgeIdempotencyKeys(now: Date): Promise<number> {
    this.assertOpen();
    let purged = 0;
    for (const [slot, record] of this.idempotency) {
      if (record.expiresAt.getTime() <= now.getTime()) {
        this.idempotency.delete(slot);
        purged++;
      }
    }
    return purged;
  }

  keyChangeVersion(): number | null {
    return this.closed ? null : this.changes;
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private owned(tenantId: string, id: string): ApiKeyRecord | undefined {
    const record = this.keys.get(id);
    return record && record.tenantId === tenantId ? record : undefined;
  }

  private ownedWebhook(tenantId: string, id: string): WebhookRecord | undefined {
    const record = this.webhooks.get(id);
    return record && record.tenantId === tenantId ? record : undefined;
  }

  private ownedDelivery(tenantId: string, webhookId: string, id: string): DeliveryRecord | undefined {
    const record = this.deliveries.get(id);
    return record && record.tenantId === tenantId && record.webhookId === webhookId ? record : undefined;
  }

  private holdDeliveries(webhookId: string, at: Date): void {
    for (const delivery of this.deliveries.values()) {
      if (delivery.webhookId !== webhookId) continue;
      if (delivery.status !== 'pending' && delivery.status !== 'retry_scheduled') continue;
      delivery.status = hold.state;
      delivery.dueAt = null;
      delivery.heldSince = new Date(at);
      delivery.updatedAt = new Date(at);
    }
  }

  private releaseDeliveries(webhookId: string, at: Date): void {
    this.consecutiveFailures.set(webhookId, 0);
    this.rates.delete(webhookId);
    for (const delivery of this.deliveries.values()) {
      if (delivery.webhookId !== webhookId || delivery.status !== hold.state) continue;
      delivery.status = 'pending';
      delivery.dueAt = new Date(at);
      delivery.heldSince = null;
      delivery.updatedAt = new Date(at);
    }
  }

  /** An endpoint's rate slots (docs/decisions.md §8.18), kept beside the record as the SQL stores keep them. */
  private rateSlots(webhookId: string): RateSlots {
    let slots = this.rates.get(webhookId);
    if (!slots) {
      slots = { nextAt: null, queueAt: null };
      this.rates.set(webhookId, slots);
    }
    return slots;
  }

  /** A new rate: fresh slots, and what the old one made wait is due at `at`. */
  private resetRate(webhookId: string, at: Date): void {
    const queueAt = this.rates.get(webhookId)?.queueAt ?? null;
    this.rates.delete(webhookId);
    if (queueAt === null) return;
    for (const delivery of this.deliveries.values()) {
      if (delivery.webhookId !== webhookId) continue;
      if (delivery.status !== 'pending' && delivery.status !== 'retry_scheduled') continue;
      const due = delivery.dueAt!.getTime();
      // Due times are queueAt's slots rounded up to the millisecond.
      if (due <= at.getTime() || due > Math.ceil(queueAt)) continue;
      delivery.dueAt = new Date(at);
      delivery.updatedAt = new Date(at);
    }
  }

  /** Whether another webhook of the tenant holds the twin claim `claim`: the SQL stores' unique index. */
  private claimTaken(record: WebhookRecord, claim: string | null): boolean {
    if (claim === null) return false;
    for (const other of this.webhooks.values()) {
      if (other.id !== record.id && other.tenantId === record.tenantId && twinClaimOf(other) === claim)
        return true;
    }
    return false;
  }

  private holds(completion: IdempotencyCompletion): boolean {
    const record = this.idempotency.get(idempotencySlot(completion.tenantId, completion.key));
    return record !== undefined && record.claimId === completion.claimId && record.state === 'in_progress';
  }

  private complete(completion: IdempotencyCompletion): boolean {
    if (!this.holds(completion)) return false;
    const record = this.idempotency.get(idempotencySlot(completion.tenantId, completion.key))!;
    record.state = 'completed';
    record.responseSealed = completion.responseSealed;
    return true;
  }

  private assertOpen(): void {
    if (this.closed) throw new KeyhookError('unavailable', 'The store is closed.', { retryAfter: 1 });
  }
}

const idempotencySlot = (tenantId: string, key: string) => `${tenantId}\u0000${key}`;
const eventSlot = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;

const LEASABLE: readonly DeliveryStatus[] = ['pending', 'retry_scheduled', 'in_flight'];

/** The claim's order: oldest due first, then by id. */
const dueOrder = (a: DeliveryRecord, b: DeliveryRecord) =>
  a.dueAt!.getTime() - b.dueAt!.getTime() || (a.id < b.id ? -1 : 1);

/**
 * FeedQuery.byteBudget for a page in feed order: the first two events, then each whose earlier
 * events' payloads total at most the budget (the SQL stores sum the same bytes before each row).
 */
function withinFeedBudget(budget: number | undefined): (event: EventRecord, index: number) => boolean {
  let before = 0;
  return (event, index) => {
    const kept = budget === undefined || index < 2 || before <= budget;
    before += Buffer.byteLength(event.payload, 'utf8');
    return kept;
  };
}
