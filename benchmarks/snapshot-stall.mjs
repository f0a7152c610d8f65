// node benchmarks/snapshot-stall.mjs: does large data-plane work stall the event loop?
//
// The reference server (examples/reference-server/dist/main.js, built first: `npx turbo run
// build --filter=@keyhook/reference-server...`) runs in a child process, as in production, on
// SQLite (a fresh file) and on Postgres (a fresh schema, dropped at the end; skipped when no
// server answers at BENCH_PG_URL). This process PUTs a snapshot of BENCH_ITEMS items (100 000,
// ~3.5 MB of JSON) to a fresh source, starts a run and waits for its discovery, then applies
// it and waits for the generation — while a second client polls `GET /healthz` in a loop, one
// request every BENCH_POLL_MS (10) after the previous answer, over its own keep-alive socket.
// Each /healthz latency (request sent → answer read) is filed under the phase it was sent in:
//   snapshot  PUT /sources/:id/items sent → its answer
//   run       POST /sources/:id/runs sent → the run has completed discovery (polled every 50 ms)
//   apply     POST /runs/:id/apply sent → the run is applied
// A round is one source through the three phases; each round's body differs (its content names
// the round), so no round finds the content of another already stored. The snapshot's body is
// built before the phase starts, so this process does nothing heavy while it measures.
// Reported per store and phase: the worst and the p99 /healthz latency, as the median over
// BENCH_ROUNDS rounds (3) with min–max, and how long the phase took. Target: the worst /healthz
// answer ≤ 100 ms during the snapshot and during the apply (the run phase is printed too). The
// verdict is "met" when every round's worst is within it, "NOT met" when none is, and "within
// noise" when the rounds' min–max interval contains it.
//
// Environment: BENCH_ITEMS (100000), BENCH_ROUNDS (3), BENCH_POLL_MS (10), BENCH_STORES
// (sqlite,postgres), BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/test), BENCH_NODE_ARGS
// (flags for the server's node, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it).
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAdminToken } from '@keyhook/core';
// The server's own scopes (its src/catalog.ts), from the build it runs.
import { REFERENCE_SCOPES } from '../examples/reference-server/dist/index.js';
import { pgAdmin, pgReachable, request, startServer } from './reference-server-child.mjs';

const ITEMS = Number(process.env.BENCH_ITEMS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POLL_MS = Number(process.env.BENCH_POLL_MS ?? 10);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const TARGET_MS = 100;
const PHASES = ['snapshot', 'run', 'apply'];
const JUDGED = ['snapshot', 'apply'];
const SECRET = 'snapshot-stall-bench-admin-secret-0123456789';
const ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64');
// Extra node flags for the server process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it.
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);

const mainScript = fileURLToPath(new URL('../examples/reference-server/dist/main.js', import.meta.url));

/** Polls /healthz until stopped; each latency is filed under the phase current when it was sent. */
function pollHealth(url) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const samples = [];
  let phase = 'idle';
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const sentIn = phase;
      const started = performance.now();
      const reply = await request(agent, url, 'GET', '/healthz');
      const ms = performance.now() - started;
      if (reply.status !== 200) throw new Error(`/healthz answered ${reply.status}`);
      samples.push({ phase: sentIn, ms });
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    agent.destroy();
  })();
  return {
    setPhase: (next) => {
      phase = next;
    },
    samples,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function snapshotBody(round) {
  const items = [];
  for (let n = 0; n < ITEMS; n++) {
    items.push({
      key: `doc-${String(n).padStart(6, '0')}`,
      content: `Round ${round}, page ${n}. Lorem ipsum.`,
    });
  }
  return JSON.stringify({ items });
}

async function waitRun(agent, url, key, sourceId, runId, from) {
  for (;;) {
    const reply = await request(agent, url, 'GET', `/api/v1/sources/${sourceId}/runs/${runId}`, {
      token: key,
    });
    if (!from.includes(reply.body.run.status)) return reply.body.run;
    await sleep(50);
  }
}

async function oneRound(server, key, round) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  const { url } = server;
  const api = (method, pathname, body) =>
    request(agent, url, method, `/api/v1${pathname}`, { token: key, body });
  const created = await api('POST', '/sources', { name: `stall ${round}` });
  const sourceId = created.body.source.id;
  const body = snapshotBody(round);
  const poller = pollHealth(url);
  await sleep(100);
  const durations = {};
  const timed = async (phase, work) => {
    poller.setPhase(phase);
    const started = performance.now();
    const result = await work();
    durations[phase] = performance.now() - started;
    poller.setPhase('idle');
    await sleep(50);
    return result;
  };
  const staged = await timed('snapshot', () => api('PUT', `/sources/${sourceId}/items`, body));
  if (staged.status !== 200 || staged.body.created !== ITEMS)
    throw new Error(`snapshot: ${staged.status} ${JSON.stringify(staged.body).slice(0, 300)}`);
  const run = await timed('run', async () => {
    const started = await api('POST', `/sources/${sourceId}/runs`);
    return waitRun(agent, url, key, sourceId, started.body.run.id, ['queued', 'running']);
  });
  if (run.status !== 'completed' || run.counts.added !== ITEMS)
    throw new Error(`run: ${JSON.stringify(run)}`);
  const applied = await timed('apply', async () => {
    const reply = await api('POST', `/sources/${sourceId}/runs/${run.id}/apply`);
    if (reply.status !== 202) throw new Error(`apply: ${reply.status} ${JSON.stringify(reply.body)}`);
    return waitRun(agent, url, key, sourceId, run.id, ['applying']);
  });
  if (applied.status !== 'applied') throw new Error(`apply: ${JSON.stringify(applied)}`);
  await poller.stop();
  agent.destroy();
  const result = {};
  for (const phase of PHASES) {
    const latencies = poller.samples
      .filter((s) => s.phase === phase)
      .map((s) => s.ms)
      .sort((a, b) => a - b);
    result[phase] = {
      worst: latencies.at(-1) ?? Number.NaN,
      p99: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? Number.NaN,
      polls: latencies.length,
      ms: durations[phase],
    };
  }
  return result;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const fmt = (values) =>
  `${median(values).toFixed(1)} (${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)})`;

async function benchStore(store) {
  let env;
  let cleanup;
  if (store === 'sqlite') {
    const dir = mkdtempSync(path.join(tmpdir(), 'keyhook-stall-'));
    env = { KEYHOOK_SQLITE_PATH: path.join(dir, 'keyhook.db') };
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  } else {
    const schema = `bench_stall_${Math.random().toString(36).slice(2, 10)}`;
    env = { DATABASE_URL: PG_URL, KEYHOOK_PG_SCHEMA: schema, KEYHOOK_ENCRYPTION_KEY: ENCRYPTION_KEY };
    cleanup = () => pgAdmin(PG_URL, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  }
  const server = await startServer({ script: mainScript, secret: SECRET, env, nodeArgs: NODE_ARGS });
  try {
    const admin = await createAdminToken({ secret: SECRET, tenantId: 'bench', subject: 'bench' });
    const agent = new http.Agent({ keepAlive: false });
    const created = await request(agent, server.url, 'POST', '/api/v1/admin/keys', {
      token: admin,
      body: { name: 'stall bench', scopes: REFERENCE_SCOPES.map((scope) => scope.name) },
    });
    if (created.status !== 201) throw new Error(`key: ${created.status} ${JSON.stringify(created.body)}`);
    const rounds = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const result = await oneRound(server, created.body.secret, round);
      rounds.push(result);
      console.log(
        `${store} round ${round}: ` +
          PHASES.map(
            (p) =>
              `${p} ${result[p].ms.toFixed(0)} ms, /healthz worst ${result[p].worst.toFixed(1)} p99 ${result[p].p99.toFixed(1)} ms (${result[p].polls} polls)`,
          ).join('; '),
      );
    }
    return rounds;
  } finally {
    await server.stop();
    await cleanup();
  }
}

const results = {};
for (const store of STORES) {
  if (store === 'postgres' && !(await pgReachable(PG_URL))) {
    console.log(`postgres: skipped, nothing answers at ${PG_URL}`);
    continue;
  }
  results[store] = await benchStore(store);
}

console.log(
  `\n/healthz latency while ${ITEMS} items are snapshotted, discovered and applied; median of ${ROUNDS} rounds (min–max), ms`,
);
console.log(
  'store     phase      phase took           worst /healthz       p99 /healthz         target   verdict',
);
const verdicts = [];
for (const [store, rounds] of Object.entries(results)) {
  for (const phase of PHASES) {
    const worst = rounds.map((r) => r[phase].worst);
    const judged = JUDGED.includes(phase);
    // Met only when every round met it, not met only when none did; otherwise the rounds'
    // min–max interval contains the target and the figure is within noise of it.
    const verdict =
      Math.max(...worst) <= TARGET_MS
        ? 'met'
        : Math.min(...worst) > TARGET_MS
          ? 'NOT met'
          : 'within noise (min–max contains the target)';
    if (judged) verdicts.push({ store, phase, worst: median(worst), verdict });
    console.log(
      `${store.padEnd(9)} ${phase.padEnd(10)} ${fmt(rounds.map((r) => r[phase].ms)).padEnd(20)} ${fmt(worst).padEnd(20)} ${fmt(
        rounds.map((r) => r[phase].p99),
      ).padEnd(20)} ${judged ? `≤ ${TARGET_MS}` : '—'.padEnd(5)}    ${judged ? verdict : '(reported)'}`,
    );
  }
}
console.log(`json ${JSON.stringify({ items: ITEMS, rounds: ROUNDS, results, verdicts })}`);
