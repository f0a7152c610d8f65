// What the API-key guard costs in instructions, counted by valgrind, where wall-clock time on a
// shared machine drifts too much to tell a microsecond apart:
//
//   node benchmarks/guard-instructions.mjs [fastify|express] [sqlite|memory]
//
// One guard-server.mjs child runs under `valgrind --tool=callgrind`; the requests are sent from
// here, one at a time on one keep-alive connection, with the same bytes to every route. After a
// warm-up of every route, each round runs GUARD_REQUESTS (2,000) requests of each variant, and an
// empty phase. A phase ends with the server's `mark`, whose call of uv_os_getpriority makes
// callgrind write out its counts and zero them (--dump-before), so each count is one phase's,
// across all the server's threads (JIT compilers and GC helpers included). The empty phase (the
// mark's round trip alone) is taken from every other before dividing by the requests.
//
// Printed per variant: instructions per request, the median of GUARD_ROUNDS (3) rounds with
// their min–max, the median difference from the open route's count in the same round, and the
// instructions of OpenSSL's SHA-256 block function in it (see sha256Blocks below).
// Variants (GUARD_VARIANTS, comma-separated): open (no guard), hook (an empty async hook),
// guarded (a key without a rate limit), limited (a rate-limited key), metered (guarded, metrics
// on), fields (limited, RateLimit fields on success). Default: open,guarded,limited.
//
// Under valgrind a request takes 50–100 times as long as at full speed, so the SQLite store's 1 ms
// change check would run on every request instead of once in about 30, and how often would follow
// the machine's load. GUARD_CHANGE_CHECK_MS (1e9) leaves it out of the counted phases; 0 runs it
// on every request, which shows what one check costs.
// Other knobs: GUARD_WARMUP (requests per variant before counting, 3,000); GUARD_VERBOSE, to print
// each phase's wall-clock ms per request as it ends, and each round's counts; GUARD_KEEP, a
// directory to keep the phases' callgrind files in (for callgrind_annotate), the server then
// running with --perf-basic-prof so that /tmp/perf-<pid>.map names the JIT-compiled functions.
import { fork } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [framework = 'fastify', storeKind = 'sqlite'] = process.argv.slice(2);
const REQUESTS = Number(process.env.GUARD_REQUESTS ?? 2_000);
const ROUNDS = Number(process.env.GUARD_ROUNDS ?? 3);
const WARMUP = Number(process.env.GUARD_WARMUP ?? 3_000);
const CHANGE_CHECK_MS = Number(process.env.GUARD_CHANGE_CHECK_MS ?? 1e9);
const VARIANTS = (process.env.GUARD_VARIANTS ?? 'open,guarded,limited').split(',');

const ROUTES = {
  open: { route: '/open', key: 'apiKey' },
  hook: { route: '/hook', key: 'apiKey' },
  guarded: { route: '/guarded', key: 'apiKey' },
  limited: { route: '/guarded', key: 'limitedKey' },
  metered: { route: '/metered', key: 'apiKey' },
  fields: { route: '/fields', key: 'limitedKey' },
};
for (const name of VARIANTS) if (!ROUTES[name]) throw new Error(`unknown variant ${name}`);

const KEEP = process.env.GUARD_KEEP;
const outDir = KEEP ?? mkdtempSync(path.join(tmpdir(), 'keyhook-callgrind-'));
const serverScript = fileURLToPath(new URL('./guard-server.mjs', import.meta.url));
const child = fork(serverScript, [framework, storeKind], {
  execPath: 'valgrind',
  execArgv: [
    '--tool=callgrind',
    '--dump-before=uv_os_getpriority',
    `--callgrind-out-file=${path.join(outDir, 'phase')}`,
    '--quiet',
    process.execPath,
    ...(KEEP ? ['--perf-basic-prof'] : []),
  ],
  env: { ...process.env, BENCH_CHANGE_CHECK_MS: String(CHANGE_CHECK_MS) },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
const replies = [];
child.on('message', (message) => replies.shift()?.(message));
const reply = () => new Promise((resolve) => replies.push(resolve));
const ready = await reply();

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const get = (route, key) =>
  new Promise((resolve, reject) => {
    const request = http.get(
      {
        host: '127.0.0.1',
        port: ready.port,
        path: route,
        agent,
        headers: { authorization: `Bearer ${key}` },
      },
      (response) => {
        response.resume();
        response.on('end', () =>
          response.statusCode === 200
            ? resolve()
            : reject(new Error(`${route}: ${response.statusCode}, not 200`)),
        );
      },
    );
    request.on('error', reject);
  });

const send = async (name, count) => {
  const { route, key } = ROUTES[name];
  for (let i = 0; i < count; i++) await get(route, ready[key]);
};

/** Ends a phase: the server's next dump holds everything since the last one. */
let phases = 0;
const mark = async () => {
  const marked = reply();
  child.send({ type: 'mark' });
  await marked;
  return ++phases;
};

console.log(
  `${framework}, ${storeKind} store, under callgrind: ${WARMUP} warm-up and ${REQUESTS} counted requests per variant, ${ROUNDS} rounds`,
);
const warmStart = performance.now();
for (let done = 0; done < WARMUP; done += 500) for (const name of VARIANTS) await send(name, 500);
const msPerRequest = (performance.now() - warmStart) / (WARMUP * VARIANTS.length);
await mark(); // start-up and warm-up: not counted

const plan = []; // per round: { empty: phase, [variant]: phase }
for (let round = 0; round < ROUNDS; round++) {
  const phasesOf = {};
  // The order rotates each round, so nothing rides on a variant's place in it.
  const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]);
  for (const name of order) {
    const start = performance.now();
    await send(name, REQUESTS);
    phasesOf[name] = await mark();
    if (process.env.GUARD_VERBOSE)
      console.log(round, name, ((performance.now() - start) / REQUESTS).toFixed(2), 'ms/request');
  }
  phasesOf.empty = await mark();
  plan.push(phasesOf);
}
agent.destroy();
const exited = new Promise((resolve) => child.once('exit', resolve));
child.disconnect();
await exited;

// callgrind names the n-th dump `phase.<n>`; its `totals:` line is the phase's instruction count.
const counts = new Map();
const shaCounts = new Map();
for (const file of readdirSync(outDir)) {
  const part = /^phase\.(\d+)$/.exec(file);
  if (!part) continue;
  const text = readFileSync(path.join(outDir, file), 'utf8');
  counts.set(Number(part[1]), Number(/^totals:\s+(\d+)/m.exec(text)[1]));
  shaCounts.set(Number(part[1]), sha256Blocks(text));
}
if (KEEP) console.log(`callgrind files in ${KEEP}, phases:`, JSON.stringify(plan));
else rmSync(outDir, { recursive: true, force: true });

/**
 * The instructions of OpenSSL's SHA-256 block function, its own cost only. valgrind hides the
 * CPU's SHA extensions, so OpenSSL takes its AVX2 code here: thousands of instructions where
 * SHA-NI at full speed takes a few hundred. Reported apart, so the rest can be read without it.
 */
function sha256Blocks(text) {
  const names = new Map();
  let inBlock = false;
  let afterCall = false;
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) {
      const [, id, name] = /^fn=\((\d+)\)(?: (.*))?/.exec(line) ?? [];
      if (name !== undefined) names.set(id, name);
      inBlock = /^sha256_block_data_order/.test(names.get(id) ?? '');
    } else if (line.startsWith('calls=')) afterCall = true;
    else if (/^[0-9+\-*]/.test(line)) {
      // The line after `calls=` is the call's inclusive cost, not the function's own.
      if (inBlock && !afterCall) sum += Number(line.split(' ')[1] ?? 0);
      afterCall = false;
    } else if (line.startsWith('cfn=')) {
      const [, id, name] = /^cfn=\((\d+)\)(?: (.*))?/.exec(line) ?? [];
      if (name !== undefined) names.set(id, name);
    }
  }
  return sum;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const perRequest = (phasesOf, name) => (counts.get(phasesOf[name]) - counts.get(phasesOf.empty)) / REQUESTS;
const fmt = (n) => Math.round(n).toLocaleString('en-US').padStart(9);

console.log(
  `about ${msPerRequest.toFixed(2)} ms per request under valgrind; SQLite change check every ${CHANGE_CHECK_MS} ms`,
);
console.log(
  `empty phase (the mark alone): ${fmt(median(plan.map((p) => counts.get(p.empty))))} instructions`,
);
if (process.env.GUARD_VERBOSE) {
  for (const [round, phasesOf] of plan.entries()) {
    const each = VARIANTS.map((name) => `${name} ${fmt(perRequest(phasesOf, name)).trim()}`);
    console.log(`round ${round}: ${each.join(', ')}`);
  }
}
console.log(
  '\ninstructions per request: median (min–max); beside it, the median of its difference from open',
);
for (const name of VARIANTS) {
  const values = plan.map((p) => perRequest(p, name));
  const extra = plan.map((p) => perRequest(p, name) - perRequest(p, 'open'));
  const sha = median(plan.map((p) => (shaCounts.get(p[name]) - shaCounts.get(p.empty)) / REQUESTS));
  const spread = `(${fmt(Math.min(...values)).trim()}–${fmt(Math.max(...values)).trim()})`;
  const beside = name === 'open' ? '' : `   ${fmt(median(extra))} over open`;
  console.log(
    `${name.padEnd(8)} ${fmt(median(values))} ${spread.padEnd(22)}${beside};  SHA-256 blocks ${fmt(sha)}`,
  );
}
