// npm run bench: requests/s of one route without and with the API-key guard (requireScope),
// through Fastify and through Express, on the SQLite store — side by side, in one run. The
// guard runs three ways: with a key that has no rate limit; with one that has (every request
// counted, as configured by default: the RateLimit fields only on a 429); and with that key
// and `successHeaders` (the fields on every success). Failed verifications are limited per
// address in all three. On Fastify, the guard also runs with OpenTelemetry metrics on ("metered":
// a keyhook with a real SDK MeterProvider, whose pull reader is not read during the run, as with a
// Prometheus scrape between runs), paired with the guarded run of the same round.
//
// Method: each server runs in its own child process (guard-server.mjs); autocannon runs here.
// After a warm-up of every variant, the variants alternate over several rounds (within a
// framework the four run back to back, in an order that rotates by one every round). The verdict
// is the median of the per-round ratios: each guarded run divided by the unguarded run beside it
// in time, so drift in the machine's speed (large on a shared VM) cancels out instead of landing
// on one side. The metered run goes right before or right after the guarded run of its round,
// flipping every round, so the pair that judges the metrics' cost is adjacent in time. The
// server's CPU time is sampled around every run: µs of server CPU per request is the cost the
// guard adds, and server CPU near 100 % shows the server (not autocannon) was the limit.
//
// What a host's route pays: the servers run as a host's would (`mode: 'production'`, keyhook's
// routes registered beside the host's), and when wrk and taskset are installed (Debian: `apt-get
// install wrk`; taskset is util-linux) the load comes from wrk pinned to the last core, with the
// server pinned to the first, so the load generator never takes the server's core or cache.
// Without them, autocannon runs in this process, and the figures say so. The guard's cost is
// the median of the per-round differences of server CPU per request (user + system, each also
// printed), against ≤ 5 µs.
//
// Environment: BENCH_DURATION (s per run, 3), BENCH_ROUNDS (15), BENCH_WARMUP (s, 3),
// BENCH_CONNECTIONS (16), BENCH_STORE (sqlite; memory to leave the database read out),
// BENCH_LOAD (wrk if installed, else autocannon; autocannon to choose it).
import { execFileSync, fork } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
// `memory` swaps the SQLite store for core's MemoryStore: the guard's cost without a database read.
const STORE = process.env.BENCH_STORE ?? 'sqlite';
const TARGET = 0.9;
// With the key's rate limit counted.
const LIMITED_TARGET = 0.85;
// With metrics on, against the same guard with metrics off.
const METRICS_TARGET = 0.97;
// Server CPU per request the guard may add to a host's route, in µs.
const ADDED_TARGET = 5;
const CORES = os.cpus().length;
const installed = (command) => {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};
const PINNED = CORES > 1 && installed('taskset');
const LOAD = process.env.BENCH_LOAD ?? (installed('wrk') ? 'wrk' : 'autocannon');

const serverScript = fileURLToPath(new URL('./guard-server.mjs', import.meta.url));

function startServer(framework) {
  const child = fork(serverScript, [framework, STORE], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  if (PINNED) execFileSync('taskset', ['-pc', '0', String(child.pid)], { stdio: 'ignore' });
  const pending = [];
  child.on('message', (message) => pending.shift()?.(message));
  const next = () => new Promise((resolve) => pending.push(resolve));
  const ready = next();
  child.once('exit', (code) => {
    if (code !== 0) {
      console.error(`${framework} server exited with ${code}`);
      process.exit(1);
    }
  });
  return ready.then((info) => ({
    framework,
    child,
    ...info,
    cpuMicros: async () => {
      const answer = next();
      child.send({ type: 'cpu' });
      return (await answer).usage;
    },
    /** The verifications GET /metered has counted so far, from a scrape of its meter. */
    verificationsCounted: async () => {
      const answer = next();
      child.send({ type: 'metrics' });
      return (await answer).verifications;
    },
  }));
}

/** wrk's run, pinned to the last core: requests answered, and the latency quantiles in ms. */
function wrk(url, seconds, authorization) {
  const args = [
    '-t1',
    `-c${CONNECTIONS}`,
    `-d${seconds}s`,
    '--latency',
    '-H',
    `Authorization: ${authorization}`,
    url,
  ];
  const out = execFileSync(
    PINNED ? 'taskset' : 'wrk',
    PINNED ? ['-c', String(CORES - 1), 'wrk', ...args] : args,
    {
      encoding: 'utf8',
    },
  );
  const count = (pattern) => Number(pattern.exec(out)?.[1] ?? 0);
  const ms = (quantile) => {
    const [, value, unit] = new RegExp(`^\\s+${quantile}%\\s+([\\d.]+)(us|ms|s)$`, 'm').exec(out) ?? [];
    return value === undefined
      ? Number.NaN
      : Math.round(Number(value) * { us: 1, ms: 1000, s: 1e6 }[unit]) / 1000;
  };
  const failed = count(/Non-2xx or 3xx responses: (\d+)/) + count(/Socket errors: connect (\d+)/);
  return { requests: count(/(\d+) requests in/), failed, p50: ms(50), p99: ms(99) };
}

async function run(server, route, seconds, apiKey = server.apiKey) {
  const url = `http://127.0.0.1:${server.port}${route}`;
  // Both routes get the same request bytes: only the server-side guard differs.
  const authorization = `Bearer ${apiKey}`;
  const before = await server.cpuMicros();
  let ok;
  let failed;
  let latency;
  if (LOAD === 'wrk') {
    const result = wrk(url, seconds, authorization);
    ({ failed } = result);
    ok = result.requests - failed;
    latency = result;
  } else {
    const result = await autocannon({
      url,
      connections: CONNECTIONS,
      duration: seconds,
      headers: { authorization },
    });
    failed = result.non2xx + result.errors + result.timeouts;
    ok = result['2xx'];
    latency = result.latency;
  }
  const after = await server.cpuMicros();
  if (failed > 0 || ok === 0)
    throw new Error(`${server.framework} ${route}: ${failed} failed, ${ok} answered`);
  const user = after.user - before.user;
  const system = after.system - before.system;
  return {
    rps: ok / seconds,
    p50: latency.p50,
    p99: latency.p99,
    cpuPerRequest: (user + system) / ok,
    userPerRequest: user / ok,
    systemPerRequest: system / ok,
    serverCpu: (user + system) / (seconds * 1e6),
  };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const servers = [await startServer('fastify'), await startServer('express')];
// Per framework: unguarded, guarded, guarded with a rate-limited key, and the same with the
// fields on success. A round runs the four back to back, in an order that rotates, so each
// guarded run has an unguarded one near it in time. On Fastify the guarded run has a partner, the
// metered run, in the same slot. Fastify only: it is where a µs counts, at 15–20 µs of server
// CPU per request against Express's 90–150, and a framework's pair adds a run to every round.
const variants = servers.flatMap((server) => [
  { server, route: '/open', label: `${server.framework.padEnd(7)} unguarded`, runs: [] },
  {
    server,
    route: '/guarded',
    label: `${server.framework.padEnd(7)} guarded  `,
    runs: [],
    partner:
      server.framework === 'fastify'
        ? { server, route: '/metered', label: `${server.framework.padEnd(7)} metered  `, runs: [] }
        : undefined,
  },
  {
    server,
    route: '/guarded',
    apiKey: server.limitedKey,
    label: `${server.framework.padEnd(7)} limited  `,
    runs: [],
  },
  {
    server,
    route: '/fields',
    apiKey: server.limitedKey,
    label: `${server.framework.padEnd(7)} fields   `,
    runs: [],
  },
]);
const PER_SERVER = 4;
const metered = variants.flatMap((variant) => (variant.partner ? [variant.partner] : []));

// Only /fields sends the fields on a success: each variant measures what it says.
for (const server of servers) {
  const fields = async (route, apiKey) =>
    (
      await fetch(`http://127.0.0.1:${server.port}${route}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      })
    ).headers.get('ratelimit-limit');
  const seen = [
    await fields('/fields', server.limitedKey),
    await fields('/guarded', server.limitedKey),
    await fields('/guarded', server.apiKey),
  ];
  if (seen[0] === null || seen[1] !== null || seen[2] !== null) {
    throw new Error(`${server.framework}: only /fields may send RateLimit fields on a success`);
  }
}
// Only /metered records metrics, one verification per request: the pair measures what it says.
for (const { server, route } of metered) {
  const counted = async (path) => {
    await fetch(`http://127.0.0.1:${server.port}${path}`, {
      headers: { authorization: `Bearer ${server.apiKey}` },
    });
    return server.verificationsCounted();
  };
  const before = await server.verificationsCounted();
  if ((await counted('/guarded')) !== before || (await counted(route)) !== before + 1) {
    throw new Error(`${server.framework}: only ${route} may record metrics, one verification per request`);
  }
}

console.log(
  `keyhook http-guard benchmark — Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}`,
);
console.log(`store: ${STORE}`);
console.log(
  `${LOAD}${PINNED ? ` on core ${CORES - 1}, the server on core 0` : ', unpinned'}: ${CONNECTIONS} connections, ` +
    `${DURATION} s per run, ${ROUNDS} rounds after a ${WARMUP} s warm-up per variant\n`,
);

for (const variant of [...variants, ...metered]) {
  await run(variant.server, variant.route, WARMUP, variant.apiKey);
}

for (let round = 0; round < ROUNDS; round++) {
  for (let group = 0; group < variants.length; group += PER_SERVER) {
    for (let step = 0; step < PER_SERVER; step++) {
      const variant = variants[group + ((round + step) % PER_SERVER)];
      const { partner } = variant;
      const slot = partner === undefined ? [variant] : round % 2 ? [partner, variant] : [variant, partner];
      for (const each of slot) {
        const result = await run(each.server, each.route, DURATION, each.apiKey);
        each.runs.push(result);
        process.stdout.write(
          `round ${round + 1}/${ROUNDS}  ${each.label}  ${result.rps.toFixed(0).padStart(7)} req/s\n`,
        );
      }
    }
  }
}

const summarize = (variant) => ({
  label: variant.label,
  rps: median(variant.runs.map((r) => r.rps)),
  rpsMin: Math.min(...variant.runs.map((r) => r.rps)),
  rpsMax: Math.max(...variant.runs.map((r) => r.rps)),
  p50: median(variant.runs.map((r) => r.p50)),
  p99: median(variant.runs.map((r) => r.p99)),
  cpuPerRequest: median(variant.runs.map((r) => r.cpuPerRequest)),
  serverCpu: median(variant.runs.map((r) => r.serverCpu)),
});
const summary = variants.map(summarize);
const meteredSummary = metered.map(summarize);

console.log('\nmedians over rounds');
console.log(
  'variant                req/s   (min – max)        p50 ms  p99 ms  server CPU  server CPU µs/request',
);
for (const s of [...summary, ...meteredSummary]) {
  const range = `(${s.rpsMin.toFixed(0)} – ${s.rpsMax.toFixed(0)})`;
  console.log(
    `${s.label}  ${s.rps.toFixed(0).padStart(7)}   ${range.padEnd(17)}  ${String(s.p50).padStart(6)}  ` +
      `${String(s.p99).padStart(6)}  ${(s.serverCpu * 100).toFixed(0).padStart(8)} %  ${s.cpuPerRequest.toFixed(1).padStart(10)}`,
  );
}

// The CPU ratio is what the req/s ratio would be if the server alone set the pace.
console.log(
  '\nversus unguarded      req/s ratio, median of rounds (min – max)   server-CPU ratio   guard adds (server CPU per request)',
);
const verdicts = [];
for (let i = 0; i < summary.length; i += PER_SERVER) {
  const open = summary[i];
  for (const [offset, kind] of [
    [1, 'guarded'],
    [2, 'limited'],
    [3, 'fields'],
  ]) {
    const guarded = summary[i + offset];
    // Paired per round: the runs of a round are adjacent in time.
    const perRound = variants[i + offset].runs.map((run, round) => run.rps / variants[i].runs[round].rps);
    const ratio = median(perRound);
    const spread = `(${Math.min(...perRound).toFixed(3)} – ${Math.max(...perRound).toFixed(3)})`;
    const cpuRatio = open.cpuPerRequest / guarded.cpuPerRequest;
    // The CPU the guard adds, paired per round too, with its user and system parts.
    const addedBy = (field) =>
      variants[i + offset].runs.map((run, round) => run[field] - variants[i].runs[round][field]);
    const addedPerRound = addedBy('cpuPerRequest');
    const added = median(addedPerRound);
    const addedSpread = `(${Math.min(...addedPerRound).toFixed(1)} – ${Math.max(...addedPerRound).toFixed(1)})`;
    const [user, system] = [median(addedBy('userPerRequest')), median(addedBy('systemPerRequest'))];
    const framework = variants[i].server.framework;
    console.log(
      `${`${framework} ${kind}`.padEnd(20)}  ${ratio.toFixed(3).padStart(11)} ${spread.padEnd(31)}   ${cpuRatio.toFixed(3).padStart(16)}   ` +
        `${added.toFixed(1)} µs ${addedSpread}: user ${user.toFixed(1)}, system ${system.toFixed(1)}`,
    );
    verdicts.push({ framework, kind, ratio, perRound, cpuRatio, addedMicros: added, addedPerRound });
  }
}
// What the rate limit adds to the guard, and the fields to the rate limit: the same rounds, paired.
console.log('\nbetween guarded variants   req/s ratio, median of rounds (min – max)');
for (const framework of ['fastify', 'express']) {
  const rounds = (kind) => verdicts.find((v) => v.framework === framework && v.kind === kind).perRound;
  for (const [over, under] of [
    ['limited', 'guarded'],
    ['fields', 'limited'],
  ]) {
    const perRound = rounds(over).map((ratio, round) => ratio / rounds(under)[round]);
    const spread = `(${Math.min(...perRound).toFixed(3)} – ${Math.max(...perRound).toFixed(3)})`;
    console.log(
      `${`${framework} ${over} / ${under}`.padEnd(26)} ${median(perRound).toFixed(3).padStart(6)} ${spread}`,
    );
  }
}
// What metrics cost the guard: each metered run against the guarded run beside it, per round.
console.log(
  '\nmetrics on / off          req/s ratio, median of rounds (min – max)   server-CPU ratio   metrics add (server CPU per request)',
);
const metricsVerdicts = metered.map((partner) => {
  const guarded = variants.find((variant) => variant.partner === partner);
  const paired = (f) => median(partner.runs.map((run, round) => f(run, guarded.runs[round])));
  const perRound = partner.runs.map((run, round) => run.rps / guarded.runs[round].rps);
  const ratio = median(perRound);
  const cpuRatio = paired((on, off) => off.cpuPerRequest / on.cpuPerRequest);
  const addedMicros = paired((on, off) => on.cpuPerRequest - off.cpuPerRequest);
  const spread = `(${Math.min(...perRound).toFixed(3)} – ${Math.max(...perRound).toFixed(3)})`;
  console.log(
    `${`${partner.server.framework} metered / guarded`.padEnd(26)} ${ratio.toFixed(3).padStart(6)} ${spread.padEnd(37)}` +
      `${cpuRatio.toFixed(3).padStart(16)}   ${addedMicros.toFixed(2)} µs`,
  );
  return { framework: partner.server.framework, ratio, perRound, cpuRatio, addedMicros };
});
console.log('');
for (const [kind, target] of [
  ['guarded', TARGET],
  ['limited', LIMITED_TARGET],
]) {
  const verdict = verdicts.find((v) => v.framework === 'fastify' && v.kind === kind);
  const [low, high] = [Math.min(...verdict.perRound), Math.max(...verdict.perRound)];
  const met = verdict.ratio >= target;
  const noise = !met && low <= target && target <= high ? ', within noise' : '';
  console.log(
    `target ${kind}/unguarded ≥ ${target} on Fastify: ${met ? 'met' : 'NOT met'} (${verdict.ratio.toFixed(3)}${noise})`,
  );
}
{
  const verdict = verdicts.find((v) => v.framework === 'fastify' && v.kind === 'guarded');
  const [low, high] = [Math.min(...verdict.addedPerRound), Math.max(...verdict.addedPerRound)];
  const met = verdict.addedMicros <= ADDED_TARGET;
  const noise = !met && low <= ADDED_TARGET && ADDED_TARGET <= high ? ', within noise' : '';
  console.log(
    `target guard adds ≤ ${ADDED_TARGET} µs of server CPU per request on Fastify: ${met ? 'met' : 'NOT met'} ` +
      `(${verdict.addedMicros.toFixed(1)} µs${noise})`,
  );
}
{
  const verdict = metricsVerdicts.find((v) => v.framework === 'fastify');
  const [low, high] = [Math.min(...verdict.perRound), Math.max(...verdict.perRound)];
  const met = verdict.ratio >= METRICS_TARGET;
  const noise = !met && low <= METRICS_TARGET && METRICS_TARGET <= high ? ', within noise' : '';
  console.log(
    `target metered/guarded ≥ ${METRICS_TARGET} on Fastify: ${met ? 'met' : 'NOT met'} (${verdict.ratio.toFixed(3)}${noise})`,
  );
}
console.log(
  `json ${JSON.stringify({ summary, verdicts, metered: meteredSummary, metrics: metricsVerdicts })}`,
);

for (const server of servers) server.child.disconnect();
