import type { ScopeCatalog } from '../catalog/scopes.js';
import { type Clock, epochMs, type RandomBytes } from '../clock.js';
import { KeyhookError } from '../errors.js';
import { isWellFormedId, newId } from '../ids.js';
import type { ApiKeys, IssuedApiKey } from '../service-interfaces.js';
import type { ApiKeyRecord, Store } from '../store/types.js';
import { parseOrThrow, validationFailed } from '../validation.js';
import { VerifiedKeyCache } from './cache.js';
import { ApiKeyFormats } from './format.js';
import { cacheDigest, digestsEqual, hashApiKey, hexOfCacheDigest } from './hash.js';
import { assertGrantsScopes, assertRateLimitAllowed, type KeyGrant, rateLimitIsHosts } from './key-grant.js';
import {
  apiKeySchemaFor,
  type CreateApiKeyInput,
  type UpdateApiKeyInput,
  updateApiKeySchema,
} from './key-schemas.js';
import { isExpired } from './key-view.js';

export interface ApiKeysDeps {
  store: Store;
  clock: Clock;
  randomBytes: RandomBytes;
  /** The scopes a key may carry: the host's. */
  scopes: ScopeCatalog;
  /** Verified keys kept in memory, at most this many; `0` turns the cache off. Default 10,000. */
  cacheEntries?: number | undefined;
  /** How keys are minted and which formats verify. Default `sk_live_`, no checksum. */
  formats?: ApiKeyFormats | undefined;
}

// Anything longer cannot be a key; hashing it costs the same as hashing a key.
const MAX_PRESENTED_LENGTH = 128;

const notFound = () => new KeyhookError('not_found', 'No API key with that id.');

/** The rules of API keys (docs/http-api.md §2, §3, §5; docs/decisions.md §3). Stores only store. */
export class ApiKeyService implements ApiKeys {
  private readonly dummyHash: string;
  private readonly cache: VerifiedKeyCache | null;
  private readonly formats: ApiKeyFormats;
  /** The create body, for the host's scopes: its JSON Schema is the document's. */
  readonly createSchema: ReturnType<typeof apiKeySchemaFor>;

  constructor(private readonly deps: ApiKeysDeps) {
    this.createSchema = apiKeySchemaFor(deps.scopes);
    this.formats = deps.formats ?? new ApiKeyFormats();
    // Unknown ids are compared against this, so they cost what a wrong secret costs.
    this.dummyHash = hashApiKey(this.formats.mint(deps.randomBytes).secret);
    this.cache = deps.cacheEntries === 0 ? null : new VerifiedKeyCache(deps.cacheEntries);
  }

  /** `grant`: what the caller may grant (a portal session's caps); a key past it is refused with `forbidden`. */
  async create(tenantId: string, input: CreateApiKeyInput, grant?: KeyGrant): Promise<IssuedApiKey> {
    const { name, scopes, expiresAt, rateLimit } = parseOrThrow(this.createSchema, input);
    assertGrantsScopes(grant, scopes, 'create');
    assertRateLimitAllowed(grant, rateLimit);
    const now = this.deps.clock.now();
    const expiry = expiresAt ? new Date(expiresAt) : null;
    if (expiry && expiry.getTime() <= now.getTime()) {
      throw validationFailed([{ path: 'expiresAt', message: 'must be in the future' }]);
    }
    // A lookup-id clash has odds of 2^-64; minting again is the whole remedy.
    for (let attempt = 0; attempt < 3; attempt++) {
      const minted = this.formats.mint(this.deps.randomBytes);
      const key: ApiKeyRecord = {
        id: newId('key', this.deps.clock, this.deps.randomBytes),
        tenantId,
        keyLookup: minted.keyLookup,
        name,
        scopes,
        keyHash: hashApiKey(minted.secret),
        status: 'active',
        expiresAt: expiry,
        createdAt: now,
        lastUsedAt: null,
        revokedAt: null,
        rateLimit: rateLimit ?? null,
        rateLimitByHost: rateLimitIsHosts(grant, rateLimit ?? null),
      };
      if ((await this.deps.store.insertApiKey(key)) === 'inserted') return { key, secret: minted.secret };
    }
    throw new KeyhookError('internal_error', 'Could not mint a unique key id.');
  }

  async get(tenantId: string, id: string): Promise<ApiKeyRecord> {
    const key = isWellFormedId(id, 'key') ? await this.deps.store.getApiKey(tenantId, id) : null;
    if (!key) throw notFound();
    return key;
  }

  async list(tenantId: string, limit: number, before?: string): Promise<ApiKeyRecord[]> {
    return this.deps.store.listApiKeys(tenantId, { limit, before });
  }

  /**
   * Mints a new secret for the same key id (docs/http-api.md §3: the old secret is invalid at
   * once). Of two concurrent rotations exactly one wins; the other gets 409 `rotation_conflict`.
   */
  async rotate(tenantId: string, id: string, grant?: KeyGrant): Promise<IssuedApiKey> {
    const current = await this.get(tenantId, id);
    // A new secret for a key is that key's scopes, granted again.
    assertGrantsScopes(grant, current.scopes, 'rotate');
    this.assertRotatable(current);
    const minted = this.formats.remint(this.deps.randomBytes, current.keyLookup);
    if (!minted) {
      throw new KeyhookError(
        'key_format_not_accepted',
        `The key's format (${current.keyLookup.slice(0, -16)}…) is no longer accepted; create a new key.`,
      );
    }
    const result = await this.deps.store.rotateApiKey(
      tenantId,
      id,
      current.keyHash,
      hashApiKey(minted.secret),
    );
    if (result.outcome === 'not_found') throw notFound();
    if (result.outcome === 'stale') {
      this.assertRotatable(result.key);
      throw new KeyhookError(
        'rotation_conflict',
        'The key was rotated by another request at the same time; that request holds the current secret.',
      );
    }
    return { key: result.key, secret: minted.secret };
  }

  /**
   * Changes a key's name or rate limit, whatever its status. A new limit applies from the
   * key's next request on every instance; a new window starts a new count. Under a grant, the
   * key's scopes must be within it, and the limit within what the session may set (§22.5).
   */
  async update(
    tenantId: string,
    id: string,
    input: UpdateApiKeyInput,
    grant?: KeyGrant,
  ): Promise<ApiKeyRecord> {
    const { name, rateLimit } = parseOrThrow(updateApiKeySchema, input);
    // A caller with no grant needs no read: its change is the host's, whatever the key holds.
    const current = grant === undefined ? undefined : await this.get(tenantId, id);
    if (current !== undefined) {
      assertGrantsScopes(grant, current.scopes, 'change');
      assertRateLimitAllowed(grant, rateLimit, current);
    }
    const changes = {
      ...(name !== undefined && { name }),
      ...(rateLimit !== undefined && {
        rateLimit,
        rateLimitByHost: rateLimitIsHosts(grant, rateLimit, current),
      }),
    };
    const key = isWellFormedId(id, 'key') ? await this.deps.store.updateApiKey(tenantId, id, changes) : null;
    if (!key) throw notFound();
    return key;
  }

  /**
   * Revokes the key (docs/http-api.md §3). Revoking again is harmless and changes nothing. Under
   * a grant, the key's scopes must be within it.
   */
  async revoke(tenantId: string, id: string, grant?: KeyGrant): Promise<ApiKeyRecord> {
    if (grant !== undefined) assertGrantsScopes(grant, (await this.get(tenantId, id)).scopes, 'revoke');
    const key = isWellFormedId(id, 'key')
      ? await this.deps.store.revokeApiKey(tenantId, id, this.deps.clock.now())
      : null;
    if (!key) throw notFound();
    return key;
  }

  /**
   * Verifies a presented key (docs/http-api.md §5.3). Malformed, unknown and wrong keys all fail
   * alike with `invalid_api_key`, after the same hash and compare; `key_revoked` and
   * `key_expired` are told only to a caller who holds the right secret.
   *
   * The store is asked for lookup id and hash together, so an unknown id and a wrong secret
   * are the same index miss; the found row's hash is still compared in constant time.
   * A key that matched is cached under the store's key-change version (keys/cache.ts).
   */
  async verify(presented: string): Promise<ApiKeyRecord> {
    return this.check(presented);
  }

  /**
   * `verify` for the guard: the answer without a promise when the key is cached. `nowMs` is
   * the request's time when the caller has read the clock already; `digest`, this key's
   * `digestOf` when the caller has computed it already.
   */
  check(
    presented: string,
    nowMs = epochMs(this.deps.clock),
    digest = this.digestOf(presented),
  ): ApiKeyRecord | Promise<ApiKeyRecord> {
    return this.cached(digest, nowMs) ?? this.fromStore(presented, digest, nowMs);
  }

  /**
   * What a presented key is cached under: the SHA-256 of its first 128 characters (a longer
   * string cannot be a key, and hashing it costs what hashing a key does).
   */
  digestOf(presented: string): string {
    return cacheDigest(
      presented.length > MAX_PRESENTED_LENGTH ? presented.slice(0, MAX_PRESENTED_LENGTH) : presented,
    );
  }

  /**
   * The key verified before under `digest`, if the store has not changed any key since, and
   * judged as `check` judges it; undefined otherwise. A cache entry is keyed by a digest the
   * store matched, and that was compared in constant time, when the key was first verified: a
   * hit needs no second compare.
   */
  cached(digest: string, nowMs: number): ApiKeyRecord | undefined {
    const version = this.cache ? this.deps.store.keyChangeVersion() : null;
    const record = version === null ? undefined : this.cache!.get(digest, version);
    return record && this.judge(record, nowMs);
  }

  private async fromStore(presented: string, digest: string, nowMs: number): Promise<ApiKeyRecord> {
    // Read before the store is: a revoke that lands during the read moves it past this entry.
    const version = this.cache ? this.deps.store.keyChangeVersion() : null;
    const presentedHash = hexOfCacheDigest(digest);
    // A key of no configured format, or with a wrong checksum, is refused without a store read.
    const parsed = this.formats.parse(presented);
    const record = parsed
      ? await this.deps.store.findApiKeyByCredential(parsed.keyLookup, presentedHash)
      : null;
    const matches = digestsEqual(presentedHash, record ? record.keyHash : this.dummyHash);
    if (!record || !matches) throw new KeyhookError('invalid_api_key', 'The API key is not valid.');
    if (version !== null) this.cache!.set(digest, record, version);
    return this.judge(record, nowMs);
  }

  /** Told only to a caller who presented the right secret (docs/http-api.md §5.5). */
  private judge(record: ApiKeyRecord, nowMs: number): ApiKeyRecord {
    if (record.status === 'revoked') throw new KeyhookError('key_revoked', 'The API key has been revoked.');
    if (record.expiresAt !== null && record.expiresAt.getTime() <= nowMs) {
      throw new KeyhookError('key_expired', 'The API key has expired.');
    }
    return record;
  }

  private assertRotatable(key: ApiKeyRecord): void {
    if (key.status === 'revoked') {
      throw new KeyhookError('key_revoked', 'A revoked key cannot be rotated.', { status: 409 });
    }
    if (isExpired(key, this.deps.clock.now())) {
      throw new KeyhookError('key_expired', 'An expired key cannot be rotated; create a new key.', {
        status: 409,
      });
    }
  }
}
