import { KeyhookError } from '../errors.js';
import type { ApiKeyRecord, ListPage, RotateOutcome, Store } from './types.js';

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

/**
 * The reference store: every rule of the Store contract in plain maps. Each method does its
 * reads and writes synchronously, before its first await, which makes it atomic in one
 * process. For tests and single-process trials; nothing survives a restart.
 */
export class MemoryStore implements Store {
  private readonly keys = new Map<string, ApiKeyRecord>();
  private readonly idByLookup = new Map<string, string>();
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
      .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
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

  private assertOpen(): void {
    if (this.closed) throw new KeyhookError('unavailable', 'The store is closed.', { retryAfter: 1 });
  }
}
