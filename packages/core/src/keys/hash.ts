import { hash, timingSafeEqual } from 'node:crypto';

/** SHA-256 of the full key, as lowercase hex: the only form of the key that is stored. */
export function hashApiKey(fullKey: string): string {
  // The one-shot hash (Node ≥ 20.12) costs well under half of createHash() on the hot path.
  return hash('sha256', fullKey, 'hex');
}

/**
 * The same SHA-256 as one character per byte: the verified-key cache's key. It is shorter to
 * hash into a Map than hex, and only a cache miss needs the hex form (hexOfCacheDigest).
 */
export function cacheDigest(fullKey: string): string {
  return hash('sha256', fullKey, 'binary'); // 'binary' is latin1: one character per byte
}

export function hexOfCacheDigest(digest: string): string {
  return Buffer.from(digest, 'latin1').toString('hex');
}

/** Constant-time equality of two hex digests of the same length. */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  if (left.length !== right.length || left.length === 0) {
    // Still spend the compare, so a malformed stored value costs what a good one does.
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}
