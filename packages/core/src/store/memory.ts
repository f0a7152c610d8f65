import { KeyhookError } from '../errors.js';
import type {
  ApiKeyRecord,
  IdempotencyClaimOutcome,
  IdempotencyCompletion,
  IdempotencyRecord,
  ListPage,
  RotateOutcome,
  Store,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
  WebhookStatusOutcome,
} from './types.js';

const date = (value: Date | null) => (value ? new Date(value.getTime()) : null);

// Callers get their own copy, so nothing outside can change what the store holds.
const copy = (record: ApiKeyRecord): ApiKeyRecord => ({
  ...record,
  scopes: [...record.scopes],
  expiresAt: date(record.expiresAt),
  createdAt: new Date(record.createdAt.getTime()),
  lastUsedAt: date(record.lastUsedAt),
  revokedAt: date(record.revokedAt),
});

const copyWebhook = (record: WebhookRecord): WebhookRecord => ({
  ...record,
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

const newestFirst = (a: { id: string }, b: { id: string }) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * The reference store: every rule of the Store contract in plain maps. Each method does its
 * reads and writes synchronously, before its first await, which makes it atomic in one
 * process. For tests and single-process trials; nothing survives a restart.
 */
export class MemoryStore implements Store {
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly idByLookup = new Map<string, string>();
  private readonly webhooks = new Map<string, WebhookRecord>();
  private readonly idempotency = new Map<string, IdempotencyRecord>();
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
    if (record.status === 'active' && this.activeTwin(record)) return 'active_twin';
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
    if (status === 'active' && this.activeTwin(record)) return { outcome: 'active_twin' };
    record.status = status;
    record.disabledReason = disabledReason;
    record.updatedAt = new Date(at);
    return { outcome: 'updated', webhook: copyWebhook(record) };
  }

  async rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    at: Date,
  ): Promise<WebhookRecord | null> {
    this.assertOpen();
    const record = this.ownedWebhook(tenantId, id);
    if (!record) return null;
    record.secretSealed = secretSealed;
    record.updatedAt = new Date(at);
    return copyWebhook(record);
  }

  async deleteWebhook(tenantId: string, id: string): Promise<boolean> {
    this.assertOpen();
    return this.ownedWebhook(tenantId, id) ? this.webhooks.delete(id) : false;
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

  private activeTwin(record: WebhookRecord): boolean {
    for (const other of this.webhooks.values()) {
      if (
        other.id !== record.id &&
        other.tenantId === record.tenantId &&
        other.status === 'active' &&
        other.twinKey === record.twinKey
      ) {
        return true;
      }
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
