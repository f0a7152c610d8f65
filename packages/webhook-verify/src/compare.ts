/**
 * True when `expected` equals any of `presented`. Every candidate is compared over all its bytes
 * and the results are OR-ed, so the time does not depend on where, or whether, one matched.
 */
export function matchesAny(expected: Uint8Array, presented: readonly Uint8Array[]): boolean {
  let matched = 0;
  for (const candidate of presented) {
    // Lengths are public (32 bytes each, checked by the parser); only the contents are secret.
    let difference = expected.length ^ candidate.length;
    for (let i = 0; i < expected.length; i++) difference |= expected[i]! ^ (candidate[i] ?? 0);
    matched |= difference === 0 ? 1 : 0;
  }
  return matched === 1;
}
