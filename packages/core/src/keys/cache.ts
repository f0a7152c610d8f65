import type { ApiKeyRecord } from '../store/types.js';

export const DEFAULT_KEY_CACHE_ENTRIES = 10_000;

/**
 * Verified keys by the SHA-256 of the presented key (keys/hash.ts cacheDigest), each valid only under the store's
 * key-change version it was read at (Store.keyChangeVersion). A revoke or rotate anywhere
 * moves that version, so no cached answer outlives it. Only keys whose hash matched are
 * cached: unknown ids and wrong secrets always go to the store, alike.
 */
export class VerifiedKeyCache {
  private readonly entries = new Map<string, { record: ApiKeyRecord; version: number }>();

  constructor(private readonly maxEntries = DEFAULT_KEY_CACHE_ENTRIES) {}

  get(digest: string, version: number): ApiKeyRecord | undefined {
    const entry = this.entries.get(digest);
    if (entry === undefined) return undefined;
    if (entry.version !== version) {
      this.entries.delete(digest);
      return undefined;
    }
    return entry.record;
  }

  set(digest: string, record: ApiKeyRecord, version: number): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(digest)) {
      // Maps iterate in insertion order: the first entry is the oldest.
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(digest, { record, version });
  }

  get size(): number {
    return this.entries.size;
  }
}
