import type { ApiKeyRecord } from '../store/types.js';

export const DEFAULT_KEY_CACHE_ENTRIES = 10_000;

interface Entry {
  digest: string;
  record: ApiKeyRecord;
  version: number;
}

/**
 * Verified keys by the SHA-256 of the presented key (keys/hash.ts cacheDigest), each valid only
 * under the store's key-change version it was read at (Store.keyChangeVersion). A revoke or
 * rotate anywhere moves that version, so no cached answer outlives it. Only keys whose hash
 * matched are cached: unknown ids and wrong secrets always go to the store, alike.
 *
 * The map is indexed by the digest's first 30 bits, a number, and each entry holds the whole
 * digest, which a lookup compares: V8 hashes a number for free but reads all 32 characters
 * of a new string to hash it, on every request. Two keys whose digests share a slot (0.05 such
 * pairs expected among 10,000 keys) take turns in it; each miss is a store read, never a wrong key.
 */
export class VerifiedKeyCache {
  private readonly entries = new Map<number, Entry>();

  constructor(private readonly maxEntries = DEFAULT_KEY_CACHE_ENTRIES) {}

  get(digest: string, version: number): ApiKeyRecord | undefined {
    const slot = slotOf(digest);
    const entry = this.entries.get(slot);
    if (entry === undefined || entry.digest !== digest) return undefined;
    if (entry.version !== version) {
      this.entries.delete(slot);
      return undefined;
    }
    return entry.record;
  }

  set(digest: string, record: ApiKeyRecord, version: number): void {
    const slot = slotOf(digest);
    if (this.entries.size >= this.maxEntries && !this.entries.has(slot)) {
      // Maps iterate in insertion order: the first entry is the oldest.
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(slot, { digest, record, version });
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The first 30 bits of a one-character-per-byte digest: a small integer on every platform. */
function slotOf(digest: string): number {
  return (
    digest.charCodeAt(0) |
    (digest.charCodeAt(1) << 8) |
    (digest.charCodeAt(2) << 16) |
    ((digest.charCodeAt(3) & 0x3f) << 24)
  );
}
