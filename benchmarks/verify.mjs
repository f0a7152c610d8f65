// node benchmarks/verify.mjs: verifications/s of @keyhook/webhook-verify on a 1 KB delivery,
// beside a bare createHmac + timingSafeEqual loop over the same bytes, in one run. The verdict
// is verifySignature() (the whole check: header, HMAC, constant-time compare, tolerance) against
// the bare loop; verify() also parses the event, so it is compared with bare + JSON.parse too.
//
// Method: every variant is a tight loop timed for BENCH_RUN_MS. After a warm-up of each, the
// variants alternate over several rounds (the order reverses every round). The verdict is the
// median of the per-round ratios verifySignature / bare, so drift in the machine's speed (large on a
// shared VM) cancels out instead of landing on one side. A third variant, bare + JSON.parse, is
// the work a hand-written receiver must do anyway to get the event that verify() returns.
//
// Needs the built package: `npx tsup` in packages/webhook-verify (npm run bench builds it).
// Environment: BENCH_RUN_MS (ms per run, 600), BENCH_ROUNDS (9), BENCH_WARMUP_MS (1000).
import { createHmac, timingSafeEqual } from 'node:crypto';
import os from 'node:os';
import { verify, verifySignature } from '@keyhook/webhook-verify';

const RUN_MS = Number(process.env.BENCH_RUN_MS ?? 600);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 1000);
const TARGET = 0.9;

// A delivery as keyhook sends it: one event, serialised once, padded with pages to 1 KB.
const secret = `whsec_${'3f9a1c5e7b2d4f60'.repeat(4)}`;
const event = {
  id: 'evt_01JGXA7Q4M2N8P6R0S3T5V7W9X',
  type: 'run.completed',
  createdAt: '2026-01-01T00:00:00.000Z',
  data: { runId: 'run_01JGXA6Z', sourceId: 'src_docs', counts: { added: 0, changed: 0 }, pages: [] },
};
while (JSON.stringify(event).length < 1024 - 60) {
  event.data.pages.push({
    url: `https://docs.example.com/guide/${event.data.pages.length}`,
    status: 'added',
  });
}
const body = Buffer.from(JSON.stringify(event).padEnd(1024, ' '));
const t = Math.floor(Date.now() / 1000);
const header = `t=${t},v1=${createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex')}`;
const presented = Buffer.from(header.slice(header.indexOf('v1=') + 3), 'hex');
const options = { now: t * 1000 };

let sink = 0;
const variants = [
  {
    label: 'bare createHmac + timingSafeEqual',
    key: 'bare',
    once() {
      const digest = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
      return timingSafeEqual(digest, presented) ? 1 : 0;
    },
  },
  {
    label: 'verifySignature()',
    key: 'signature',
    once() {
      verifySignature(body, header, secret, options);
      return 1;
    },
  },
  {
    label: 'verify() (also parses the event)',
    key: 'verify',
    once: () => verify(body, header, secret, options).id.length,
  },
  {
    label: 'bare + JSON.parse (same output)',
    key: 'bareParse',
    once() {
      const digest = createHmac('sha256', secret).update(`${t}.`).update(body).digest();
      if (!timingSafeEqual(digest, presented)) throw new Error('mismatch');
      return JSON.parse(body.toString('utf8')).id.length;
    },
  },
].map((variant) => ({ ...variant, runs: [] }));

/** Verifications per second over one timed loop; the clock is read every 256 calls. */
function run(variant, ms) {
  const started = performance.now();
  let count = 0;
  let elapsed = 0;
  do {
    for (let i = 0; i < 256; i++) sink += variant.once();
    count += 256;
    elapsed = performance.now() - started;
  } while (elapsed < ms);
  return (count / elapsed) * 1000;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

// The loops must measure successful verifications, not a fast failure path.
for (const variant of variants) if (variant.once() <= 0) throw new Error(`${variant.label} did not verify`);

console.log(
  `keyhook webhook-verify benchmark — Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}`,
);
console.log(
  `body: ${body.length} bytes; ${ROUNDS} rounds of ${RUN_MS} ms per variant after a ${WARMUP_MS} ms warm-up\n`,
);

for (const variant of variants) run(variant, WARMUP_MS);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const variant of order) variant.runs.push(run(variant, RUN_MS));
  const line = variants.map((v) => `${v.key} ${v.runs[round].toFixed(0).padStart(7)}/s`).join('  ');
  console.log(`round ${round + 1}/${ROUNDS}  ${line}`);
}

const [bare, signature, verified, bareParse] = variants;
const perRound = (a, b) => a.runs.map((value, round) => value / b.runs[round]);
const ratio = median(perRound(signature, bare));
const ratioSpread = perRound(signature, bare);
const verifyRatio = median(perRound(verified, bare));
const likeForLike = median(perRound(verified, bareParse));
const summary = variants.map((v) => ({
  variant: v.key,
  label: v.label,
  perSecond: median(v.runs),
  min: Math.min(...v.runs),
  max: Math.max(...v.runs),
  microsPerCall: 1e6 / median(v.runs),
}));

console.log('\nmedians over rounds');
console.log('variant                               verifications/s   (min – max)           µs per call');
for (const s of summary) {
  const range = `(${s.min.toFixed(0)} – ${s.max.toFixed(0)})`;
  console.log(
    `${s.label.padEnd(36)}  ${s.perSecond.toFixed(0).padStart(15)}   ${range.padEnd(20)}  ${s.microsPerCall.toFixed(2).padStart(10)}`,
  );
}
console.log(
  `\nverifySignature / bare, median of per-round ratios: ${ratio.toFixed(3)} ` +
    `(${Math.min(...ratioSpread).toFixed(3)} – ${Math.max(...ratioSpread).toFixed(3)})`,
);
console.log(
  `verify / bare: ${verifyRatio.toFixed(3)}; verify / (bare + JSON.parse): ${likeForLike.toFixed(3)}`,
);
console.log(
  `target verifySignature / bare ≥ ${TARGET}: ${ratio >= TARGET ? 'met' : 'NOT met'} (${ratio.toFixed(3)})`,
);
console.log(
  `json ${JSON.stringify({ bodyBytes: body.length, rounds: ROUNDS, runMs: RUN_MS, summary, ratio, perRound: ratioSpread, verifyRatio, likeForLike, target: TARGET, met: ratio >= TARGET, sink: sink > 0 })}`,
);
