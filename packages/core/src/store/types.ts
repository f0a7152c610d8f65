import type { Scope } from '../scopes.js';
import type { EventType } from '../webhooks/events.js';

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

export type WebhookStatus = 'active' | 'disabled';
export type WebhookDisabledReason = 'manual' | 'failures';

/** A webhook endpoint as stored. The signing secret is here only sealed (crypto/secret-box.ts). */
export interface WebhookRecord {
  id: string;
  tenantId: string;
  /** The normalised URL (the WHATWG parser's `href`): what is shown and what twins compare. */
  url: string;
  /** Sorted, without duplicates: the event *set*. */
  events: EventType[];
  /**
   * Lowercase hex SHA-256 of the normalised URL and the event set. Two webhooks of one tenant
   * with the same twinKey are twins; at most one of them may be active (spec §4 rule 5).
   */
  twinKey: string;
  status: WebhookStatus;
  disabledReason: WebhookDisabledReason | null;
  /** The `whsec_…` signing secret, sealed with the tenant and webhook id as associated data. */
  secretSealed: string;
  createdAt: Date;
  updatedAt: Date;
}

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

  /**
   * Inserts a webhook. When the record is active and the tenant already has an active
   * webhook with the same `twinKey`, nothing is written and `'active_twin'` is returned:
   * decided atomically (a partial unique index or one locked statement), so of N concurrent
   * inserts of active twins exactly one returns `'inserted'`. With `completion`, the insert is
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
   * Sets status and disabledReason and stamps `updatedAt = at`, in one statement. Enabling
   * while another active webhook of the tenant has the same twinKey writes nothing and
   * returns `active_twin`, under the same atomic rule as insertWebhook. Setting the status a
   * webhook already has writes nothing and returns it as it is.
   */
  setWebhookStatus(
    tenantId: string,
    id: string,
    status: WebhookStatus,
    disabledReason: WebhookDisabledReason | null,
    at: Date,
  ): Promise<WebhookStatusOutcome>;

  /** Replaces the sealed signing secret and stamps `updatedAt = at`; null when there is no such webhook. */
  rotateWebhookSecret(
    tenantId: string,
    id: string,
    secretSealed: string,
    at: Date,
  ): Promise<WebhookRecord | null>;

  /** Deletes the webhook; false when the tenant has no such webhook. */
  deleteWebhook(tenantId: string, id: string): Promise<boolean>;

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

  /** Deletes every record with `expiresAt <= now`, in any tenant; returns how many. */
  purgeIdempotencyKeys(now: Date): Promise<number>;

  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;

  /** Releases connections. The store is unusable afterwards. */
  close(): Promise<void>;
}
