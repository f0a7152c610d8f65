/**
 * How the time of `verify(a)` compares with the time of `verify(b)`: the median, over many
 * rounds, of the ratio of two adjacent samples. Adjacent samples share whatever load the
 * machine has at that moment, and the order alternates, so drift and noise cancel out.
 * Near 1.0: the two cost the same.
 */
export async function medianTimeRatio(
  verify: (presented: string) => Promise<unknown>,
  a: string,
  b: string,
  { rounds = 61, perRound = 400 }: { rounds?: number; perRound?: number } = {},
): Promise<number> {
  const sample = async (key: string) => {
    const start = process.hrtime.bigint();
    for (let i = 0; i < perRound; i++) await verify(key).catch(() => {});
    return Number(process.hrtime.bigint() - start);
  };
  for (let i = 0; i < 6; i++) await sample(i % 2 ? a : b); // warm both paths up
  const ratios: number[] = [];
  for (let round = 0; round < rounds; round++) {
    if (round % 2) {
      const ta = await sample(a);
      ratios.push(ta / (await sample(b)));
    } else {
      const tb = await sample(b);
      ratios.push((await sample(a)) / tb);
    }
  }
  ratios.sort((x, y) => x - y);
  return ratios[Math.floor(ratios.length / 2)]!;
}
