// npm run bench: requests/s of one route without and with the API-key guard (requireScope),
// through Fastify and through Express, on the SQLite store — side by side, in one run.
//
// Method: each server runs in its own child process (guard-server.mjs); autocannon runs here.
// After a warm-up of every variant, the variants alternate over several rounds (the order
// flips every round: A B, then B A). The verdict is the median of the per-round ratios: each
// guarded run divided by the unguarded run beside it in time, so drift in the machine's speed
// (large on a shared VM) cancels out instead of landing on one side. The server's CPU time is sampled around every run: µs of server CPU per request is
// the cost the guard adds, and server CPU near 100 % shows the server (not autocannon) was the
// limit.
//
// Environment: BENCH_DURATION (s per run, 3), BENCH_ROUNDS (15), BENCH_WARMUP (s, 3),
// BENCH_CONNECTIONS (10), BENCH_STORE (sqlite; memory to leave the database read out).
import { fork } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const DURATION = Number(process.env.BENCH_DURATION ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
// `memory` swaps the SQLite store for core's MemoryStore: the guard's cost without a database read.
const STORE = process.env.BENCH_STORE ?? 'sqlite';
const TARGET = 0.9;

const serverScript = fileURLToPath(new URL('./guard-server.mjs', import.meta.url));

function startServer(framework) {
  const child = fork(serverScript, [framework, STORE], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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
      const { usage } = await answer;
      return usage.user + usage.system;
    },
  }));
}

async function run(server, route, seconds) {
  const before = await server.cpuMicros();
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}${route}`,
    connections: CONNECTIONS,
    duration: seconds,
    // Both routes get the same request bytes: only the server-side guard differs.
    headers: { authorization: `Bearer ${server.apiKey}` },
  });
  const cpu = (await server.cpuMicros()) - before;
  const ok = result['2xx'];
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0 || ok === 0) {
    throw new Error(
      `${server.framework} ${route}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  }
  return {
    rps: ok / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuPerRequest: cpu / ok,
    serverCpu: cpu / (seconds * 1e6),
  };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const servers = [await startServer('fastify'), await startServer('express')];
const variants = servers.flatMap((server) => [
  { server, route: '/open', label: `${server.framework.padEnd(7)} unguarded`, runs: [] },
  { server, route: '/guarded', label: `${server.framework.padEnd(7)} guarded  `, runs: [] },
]);

console.log(
  `keyhook http-guard benchmark — Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}`,
);
console.log(`store: ${STORE}`);
console.log(
  `autocannon: ${CONNECTIONS} connections, ${DURATION} s per run, ${ROUNDS} rounds after a ${WARMUP} s warm-up per variant\n`,
);

for (const variant of variants) await run(variant.server, variant.route, WARMUP);

for (let round = 0; round < ROUNDS; round++) {
  // A B A B …, with the pair order flipped every other round so neither side always goes first.
  for (let pair = 0; pair < variants.length; pair += 2) {
    const order = round % 2 === 0 ? [pair, pair + 1] : [pair + 1, pair];
    for (const index of order) {
      const variant = variants[index];
      const result = await run(variant.server, variant.route, DURATION);
      variant.runs.push(result);
      process.stdout.write(
        `round ${round + 1}/${ROUNDS}  ${variant.label}  ${result.rps.toFixed(0).padStart(7)} req/s\n`,
      );
    }
  }
}

const summary = variants.map((variant) => ({
  label: variant.label,
  rps: median(variant.runs.map((r) => r.rps)),
  rpsMin: Math.min(...variant.runs.map((r) => r.rps)),
  rpsMax: Math.max(...variant.runs.map((r) => r.rps)),
  p50: median(variant.runs.map((r) => r.p50)),
  p99: median(variant.runs.map((r) => r.p99)),
  cpuPerRequest: median(variant.runs.map((r) => r.cpuPerRequest)),
  serverCpu: median(variant.runs.map((r) => r.serverCpu)),
}));

console.log('\nmedians over rounds');
console.log(
  'variant                req/s   (min – max)        p50 ms  p99 ms  server CPU  server CPU µs/request',
);
for (const s of summary) {
  const range = `(${s.rpsMin.toFixed(0)} – ${s.rpsMax.toFixed(0)})`;
  console.log(
    `${s.label}  ${s.rps.toFixed(0).padStart(7)}   ${range.padEnd(17)}  ${String(s.p50).padStart(6)}  ` +
      `${String(s.p99).padStart(6)}  ${(s.serverCpu * 100).toFixed(0).padStart(8)} %  ${s.cpuPerRequest.toFixed(1).padStart(10)}`,
  );
}

// The CPU ratio is what the req/s ratio would be if the server alone set the pace.
console.log(
  '\nguarded / unguarded   req/s ratio, median of rounds (min – max)   server-CPU ratio   guard adds (server CPU per request)',
);
const verdicts = [];
for (let i = 0; i < summary.length; i += 2) {
  const [open, guarded] = [summary[i], summary[i + 1]];
  // Paired per round: the two runs of a round are adjacent in time.
  const perRound = variants[i + 1].runs.map((run, round) => run.rps / variants[i].runs[round].rps);
  const ratio = median(perRound);
  const spread = `(${Math.min(...perRound).toFixed(3)} – ${Math.max(...perRound).toFixed(3)})`;
  const cpuRatio = open.cpuPerRequest / guarded.cpuPerRequest;
  const added = guarded.cpuPerRequest - open.cpuPerRequest;
  const framework = variants[i].server.framework;
  console.log(
    `${framework.padEnd(20)}  ${ratio.toFixed(3).padStart(11)} ${spread.padEnd(31)}   ${cpuRatio.toFixed(3).padStart(16)}   ${added.toFixed(1)} µs`,
  );
  verdicts.push({ framework, ratio, perRound, cpuRatio, addedMicros: added });
}
const fastify = verdicts.find((v) => v.framework === 'fastify');
console.log(
  `\ntarget guarded/unguarded ≥ ${TARGET} on Fastify: ${fastify.ratio >= TARGET ? 'met' : 'NOT met'} (${fastify.ratio.toFixed(3)})`,
);
console.log(`json ${JSON.stringify({ summary, verdicts })}`);

for (const server of servers) server.child.disconnect();
