/**
 * True when `expectedHex` (lowercase, as a digest gives it) equals any of `presented` (hex of
 * either case, checked by the header reader). Every candidate is compared over all its
 * characters and the results are OR-ed, so the time does not depend on where, or whether, one
 * matched (docs/http-api.md §6.4 rule 4). Comparing the hex text spares decoding the header and a
 * Buffer for the digest: on the sync path that is most of what verifying adds to the HMAC itself.
 */
export function matchesAny(expectedHex: string, presented: readonly string[]): boolean {
  let matched = 0;
  for (const candidate of presented) {
    // Lengths are public (64 characters each, checked by the reader); only the contents are secret.
    let difference = expectedHex.length ^ candidate.length;
    for (let i = 0; i < expectedHex.length; i++) {
      // `| 0x20` folds A–F onto a–f and leaves 0–9 as they are.
      difference |= expectedHex.charCodeAt(i) ^ (candidate.charCodeAt(i) | 0x20);
    }
    matched |= difference === 0 ? 1 : 0;
  }
  return matched === 1;
}
