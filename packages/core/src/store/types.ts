import type { Scope } from '../scopes.js';

export type ApiKeyStatus = 'active' | 'revoked';

/** An API key as stored. The plaintext key is never here: only its lookup id and hash. */
export interface ApiKeyRecord {
  id: string;
  tenantId: string;
  /** `sk_live_<16 hex>`; unique across all tenants. */
  keyLookup: string;
  name: string;
  scopes: Scope[];
  /** Lowercase hex SHA-256 of the full key. */
  keyHash: string;
  status: ApiKeyStatus;
  expiresAt: Date | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
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
 * What keyhook needs from a database. Every method is required. Every method that takes a
 * tenant id only ever reads or writes that tenant's rows.
 *
 * Stores are dumb and atomic: each method below is one statement or one transaction, never
 * a read and a write across awaits. When the database cannot be reached, a method throws
 * `KeyhookError('unavailable')`.
 */
export interface Store {
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

  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;

  /** Releases connections. The store is unusable afterwards. */
  close(): Promise<void>;
}
