// node benchmarks/delivery-against.mjs <commit>: does delivery throughput move between <commit>
// and this working tree? The delivery benchmark's figure compared across two builds, paired.
//
// It checks <commit> out in a detached worktree beside this repository (`git worktree add`),
// gives it this tree's node_modules when both package-lock.json files are equal (else `npm ci`
// there), and builds it. Then, BENCH_PAIRS (12) times, it runs `delivery.mjs` once in each tree
// (one round, BENCH_SECTIONS postgres by default, graphile-worker left out), the order reversing
// every pair, and reads each run's `json` line. Per pair: this tree's deliveries/s over the
// commit's, the same for each run's keyhook ÷ bare ratio, Node CPU per delivery and Postgres CPU
// per delivery. Prints the median of each with its min–max; "does not move" reads as 1.00
// inside the interval. The worktree is removed at the end (BENCH_KEEP_WORKTREE=1 keeps it).
//
// Environment: BENCH_PAIRS (12), BENCH_SECTIONS (postgres; or throughput for SQLite), and what
// delivery.mjs reads (BENCH_DELIVERIES, BENCH_PG_URL, …), passed on to both trees.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median, numberFrom } from './peers.mjs';

const commit = process.argv[2];
if (!commit) {
  console.error('usage: node benchmarks/delivery-against.mjs <commit>');
  process.exit(2);
}
const PAIRS = numberFrom('BENCH_PAIRS', 12);
const SECTION = process.env.BENCH_SECTIONS ?? 'postgres';
if (SECTION !== 'postgres' && SECTION !== 'throughput')
  throw new RangeError('BENCH_SECTIONS: postgres | throughput');

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (command, args, cwd, { quiet = true, env = process.env } = {}) =>
  execFileSync(command, args, {
    cwd,
    env,
    encoding: 'utf8',
    maxBuffer: 1 << 28,
    stdio: quiet ? 'pipe' : 'inherit',
  });
const sha = run('git', ['rev-parse', '--verify', `${commit}^{commit}`], here).trim();
const theirs = path.join(os.tmpdir(), `keyhook-against-${sha.slice(0, 12)}`);

function prepare() {
  if (existsSync(theirs)) return;
  run('git', ['worktree', 'add', '--detach', theirs, sha], here);
  const sameLock =
    readFileSync(path.join(here, 'package-lock.json'), 'utf8') ===
    readFileSync(path.join(theirs, 'package-lock.json'), 'utf8');
  if (sameLock) {
    // Workspace links in node_modules are relative, so a copy points into the worktree's packages.
    const dirs = ['.', 'benchmarks'];
    for (const parent of ['packages', 'examples'])
      for (const name of readdirSync(path.join(theirs, parent))) dirs.push(path.join(parent, name));
    for (const dir of dirs) {
      const from = path.join(here, dir, 'node_modules');
      if (existsSync(from) && existsSync(path.join(theirs, dir)))
        cpSync(from, path.join(theirs, dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
    }
  } else {
    console.log(`package-lock.json differs at ${sha.slice(0, 12)}: npm ci there (minutes)`);
    run('npm', ['ci', '--no-audit', '--no-fund'], theirs, { quiet: false });
  }
  run('npx', ['turbo', 'run', 'build', '--output-logs=errors-only'], theirs, { quiet: false });
}

function once(tree) {
  const env = { ...process.env, BENCH_SECTIONS: SECTION, BENCH_ROUNDS: '1', BENCH_PEER: 'off' };
  const out = run('node', ['--expose-gc', 'benchmarks/delivery.mjs'], tree, { env });
  const line = out.split('\n').find((l) => l.startsWith('json '));
  if (!line) throw new Error(`no json line from delivery.mjs in ${tree}:\n${out}`);
  const { results, summary } = JSON.parse(line.slice(5));
  if (summary.some((row) => row.verdict === 'ERROR'))
    throw new Error(`delivery.mjs in ${tree} reported ERROR:\n${out}`);
  const [bare, keyhook] = results.throughput;
  return {
    perSecond: keyhook.perSecond,
    ratio: keyhook.perSecond / bare.perSecond,
    cpu: keyhook.cpuMicrosPerDelivery,
    database: keyhook.database?.cpuMicros,
  };
}

const pad = (text, width) => String(text).padEnd(width);
const spread = (values) => {
  const finite = values.filter(Number.isFinite);
  if (!finite.length) return 'n/a';
  return `${median(finite).toFixed(3)} (${Math.min(...finite).toFixed(3)}–${Math.max(...finite).toFixed(3)})`;
};

try {
  prepare();
  console.log(
    `delivery.mjs, section ${SECTION}, this tree against ${sha.slice(0, 12)}: ${PAIRS} pairs, the order reversing every pair`,
  );
  const pairs = [];
  for (let i = 0; i < PAIRS; i++) {
    const order = i % 2 ? ['ours', 'theirs'] : ['theirs', 'ours'];
    const pair = {};
    for (const side of order) pair[side] = once(side === 'ours' ? here : theirs);
    pairs.push(pair);
    console.log(
      `pair ${String(i + 1).padStart(2)}: ${pair.ours.perSecond.toFixed(0)}/s here, ${pair.theirs.perSecond.toFixed(0)}/s there; ` +
        `÷ bare ${pair.ours.ratio.toFixed(3)} here, ${pair.theirs.ratio.toFixed(3)} there`,
    );
  }
  const rows = [
    ['deliveries/s', (p) => p.ours.perSecond / p.theirs.perSecond],
    ['keyhook ÷ bare', (p) => p.ours.ratio / p.theirs.ratio],
    ['Node CPU per delivery', (p) => p.ours.cpu / p.theirs.cpu],
    ['Postgres CPU per delivery', (p) => p.ours.database / p.theirs.database],
  ];
  console.log(`\nthis tree / ${sha.slice(0, 12)}, median of the pairs (min–max)`);
  for (const [label, of] of rows) console.log(`  ${pad(label, 26)} ${spread(pairs.map(of))}`);
  console.log(
    `  (keyhook ÷ bare: ${spread(pairs.map((p) => p.ours.ratio))} here, ${spread(pairs.map((p) => p.theirs.ratio))} there)`,
  );
} finally {
  if (process.env.BENCH_KEEP_WORKTREE !== '1' && existsSync(theirs))
    run('git', ['worktree', 'remove', '--force', theirs], here);
}
