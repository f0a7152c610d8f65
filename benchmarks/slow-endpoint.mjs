// node benchmarks/slow-endpoint.mjs: does an endpoint that hangs delay the others?
//
// Each run publishes BENCH_SLOW_RATE (40) events a second for BENCH_SLOW_SECONDS (15 s) to a
// healthy endpoint, and times each event from its publish to its arrival at the receiver (a child
// process, delivery-receiver.mjs, its clock's offset taken out). Three variants, on SQLite and on
// Postgres with one instance and with two (each instance a worker with the default options:
// 64 slots, 16 per endpoint):
//   alone     the healthy endpoint by itself;
//   beside    a second endpoint subscribed to the same events never answers: each of its attempts
//             runs to the attempt timeout (10 s), for the whole run;
//   uncapped  beside, with endpointConcurrency = concurrency (no cap per endpoint): what the cap
//             prevents, once per store.
// `alone` and `beside` alternate over BENCH_ROUNDS (2) rounds. Target (issue 41): the healthy
// endpoint's p99 stays under 50 ms beside the one that hangs. Postgres is skipped when nothing
// answers at BENCH_PG_URL.
import path from 'node:path';
import { createSqliteStore } from '@keyhook/store-sqlite';
import {
  countingLogger,
  EVENT_TYPE,
  eventData,
  makeKeyhook,
  now,
  numberFrom,
  openPostgresInstances,
  percentile,
  postgresReachable,
  runCleanups,
  startReceiver,
  TENANT,
  tempDir,
} from './peers.mjs';

const RATE = numberFrom('BENCH_SLOW_RATE', 40);
const SECONDS = numberFrom('BENCH_SLOW_SECONDS', 15);
const ROUNDS = numberFrom('BENCH_ROUNDS', 2);
const TARGET_P99_MS = 50;
const EVENTS = RATE * SECONDS;

const receiver = await startReceiver();
const hangUrl = `${receiver.url}/hang`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function openSqlite() {
  const temp = tempDir();
  const logger = countingLogger();
  const store = createSqliteStore({ filename: path.join(temp.dir, 'keyhook.db'), logger });
  const keyhook = makeKeyhook(store, logger);
  const { secret } = await keyhook.webhooks.create(TENANT, { url: receiver.url, events: [EVENT_TYPE] });
  return {
    keyhooks: [keyhook],
    secret,
    async close() {
      await keyhook.close();
      await store.close();
      temp.remove();
    },
  };
}

const openPostgres = (instances) => () =>
  openPostgresInstances(receiver, {}, { instances, concurrency: 64, lanes: 1 });

/** One run: the healthy endpoint's latencies, in ms, sorted. */
async function run(open, variant) {
  const backend = await open();
  try {
    const [first] = backend.keyhooks;
    const { secret } = backend;
    if (variant !== 'alone') await first.webhooks.create(TENANT, { url: hangUrl, events: [EVENT_TYPE] });
    const options = variant === 'uncapped' ? { endpointConcurrency: 64 } : {};
    const workers = backend.keyhooks.map((keyhook) => keyhook.createWorker(options));
    for (const worker of workers) worker.start();
    await receiver.reset(secret, true);
    const clock = await receiver.clockOffset();
    const started = performance.now();
    for (let i = 0; i < EVENTS; i++) {
      const wait = started + (i * 1000) / RATE - performance.now();
      if (wait > 0) await sleep(wait);
      await backend.keyhooks[i % backend.keyhooks.length].events.publish({
        tenantId: TENANT,
        type: EVENT_TYPE,
        data: eventData(i, now()),
      });
    }
    // Every healthy delivery arrives, however late (the uncapped ones wait out the timeouts).
    const deadline = performance.now() + 120_000;
    let received = await receiver.stats();
    while (received.samples.length < EVENTS && performance.now() < deadline) {
      await sleep(200);
      received = await receiver.stats();
    }
    const problems = [];
    if (received.samples.length < EVENTS) problems.push(`${received.samples.length}/${EVENTS} arrived`);
    if (received.hits !== received.distinct) problems.push(`${received.hits - received.distinct} duplicates`);
    if (received.badSignatures) problems.push(`${received.badSignatures} bad signatures`);
    if (variant !== 'alone' && received.hung === 0) problems.push('the hanging endpoint got nothing');
    await receiver.ask({ type: 'release' });
    return {
      latencies: received.samples.map((ms) => ms - clock.offsetMs).sort((a, b) => a - b),
      hung: received.hung,
      problems,
    };
  } finally {
    await receiver.ask({ type: 'release' });
    await backend.close();
  }
}

const describe = (sorted) =>
  `p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms, max ${sorted.at(-1).toFixed(0)} ms`;

console.log(
  `keyhook slow-endpoint benchmark — Node ${process.version}: ${RATE} events/s for ${SECONDS} s to a healthy endpoint; ` +
    `beside it, one that never answers (attempt timeout 10 s); default workers (64 slots, 16 per endpoint); ${ROUNDS} rounds`,
);
const stores = [['SQLite', openSqlite]];
const unreachable = await postgresReachable();
if (unreachable) console.log(`postgres: skipped (${unreachable})`);
else stores.push(['Postgres, 1 instance', openPostgres(1)], ['Postgres, 2 instances', openPostgres(2)]);

const verdicts = [];
try {
  for (const [name, open] of stores) {
    const p99 = { alone: [], beside: [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const variant of round % 2 ? ['beside', 'alone'] : ['alone', 'beside']) {
        const result = await run(open, variant);
        p99[variant].push(percentile(result.latencies, 99));
        console.log(
          `${name}, round ${round + 1}, ${variant.padEnd(6)}: ${describe(result.latencies)}` +
            (variant === 'beside' ? `; ${result.hung} attempts hung` : '') +
            (result.problems.length ? `  PROBLEMS: ${result.problems.join('; ')}` : ''),
        );
      }
    }
    const uncapped = await run(open, 'uncapped');
    console.log(`${name}, uncapped (no cap per endpoint), beside: ${describe(uncapped.latencies)}`);
    const worst = Math.max(...p99.beside);
    const verdict = worst < TARGET_P99_MS ? 'met' : 'NOT met';
    verdicts.push(
      `${name}: the healthy endpoint's p99 beside one that hangs ${p99.beside.map((v) => v.toFixed(1)).join(', ')} ms ` +
        `(alone ${p99.alone.map((v) => v.toFixed(1)).join(', ')} ms; uncapped ${percentile(uncapped.latencies, 99).toFixed(0)} ms); ` +
        `target < ${TARGET_P99_MS} ms: ${verdict}`,
    );
  }
} finally {
  receiver.close();
  await runCleanups();
}
console.log(`\n${verdicts.join('\n')}`);
process.exit(0);
