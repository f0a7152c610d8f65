// node --expose-gc benchmarks/delivery.mjs: what keyhook's webhook delivery costs, in one run.
//
//  1. Throughput, SQLite. N deliveries of a ~1 KB event (publish → the worker's signed POST →
//     the 2xx recorded) against a bare loop that builds the same body, signs it (createHmac) and
//     POSTs it through a keep-alive agent, with no persistence at all. Both run CONCURRENCY
//     requests in flight against the same receiver. Target: keyhook / bare ≥ 0.6.
//     - keyhook's figure is end to end: the clock starts at the first publish and stops when the
//       store has recorded the Nth success. "Recorded" means store.completeAttempt() resolved
//       with outcome `recorded` for an attempt whose new status is `succeeded` (the script wraps
//       the store's completeAttempt to count them; the count is checked afterwards against
//       listDeliveries(status: succeeded) and the receiver's distinct event ids).
//     - Publishing runs concurrently with delivery, as in an app: the worker is started first,
//       then PUBLISH_LANES publisher loops (default CONCURRENCY: an app publishes from its
//       concurrent request handlers) publish all N, each awaiting its publish and yielding to the
//       event loop every 16. Publishing is part of the measured time. The SQLite store commits
//       the publishes, leases and attempt records of one turn of the event loop together (group
//       commit), so concurrent publishers share commits; one lane (BENCH_PUBLISH_LANES=1) measures
//       a single sequential publisher, which gets no sharing.
//       BENCH_PUBLISH=upfront publishes all N first and starts the worker after (same clock),
//       which splits the publish and delivery phases.
//     - The bare loop's clock runs from its first request to its last response.
//     - Before the clock, each keyhook instance (and the graphile-worker sender) delivers
//       BENCH_PREWARM (5000) events and the bare loop's agent sends as many requests: each is timed
//       as a sender that has been up a while (statements prepared, connections open, secrets
//       opened, code optimised), not from its cold start.
//     - Order: a warm-up of each variant, then ROUNDS rounds; the order within a round reverses
//       every round (bare, sqlite, postgres / postgres, sqlite, bare). The verdict is the median
//       of the per-round ratios, each keyhook run divided by the bare run of the same round, so
//       the drift of a shared VM cancels instead of landing on one side. Every keyhook run gets a
//       fresh SQLite file (or Postgres schema), so rounds do not grow one database.
//  2. Postgres, two instances. The same N through two keyhook instances, each on its own
//     PostgresStore (its own pool) over one fresh schema `bench_<random>` (dropped at the end),
//     each with a worker of CONCURRENCY/2, so the in-flight total equals the bare loop's.
//     Publishes alternate between the two instances, from the same number of publisher lanes as
//     on SQLite (BENCH_PG_PUBLISH_LANES to change it). Targets: keyhook / bare ≥ 0.25, and Node
//     CPU per delivery (this process: both instances, the publishers, the harness) ≤ 2.0× the
//     bare loop's CPU per delivery in the same round; keyhook on Postgres ≥ 3× the
//     graphile-worker sender's deliveries/s.
//     Also printed per delivery: round trips (queries sent through pg, counted by wrapping
//     pg.Client's query, by statement kind), transactions (statements outside BEGIN … COMMIT, and
//     each COMMIT) and the Postgres server's CPU (its processes in /proc, when it runs on this
//     machine).
//  3. Latency, SQLite. LATENCY_EVENTS events published one at a time, one every
//     LATENCY_INTERVAL_MS (a fixed schedule; a late timer publishes at once), after 50 unmeasured
//     warm-up events. Each event carries `sentAt` = performance.timeOrigin + performance.now(),
//     read just before publish(); the receiver (another process on this machine) subtracts it
//     from its own clock when the request body has arrived. The two processes' clocks are
//     compared over IPC first (the offset of the ping with the shortest round trip; its error is
//     at most half that round trip, printed) and the offset is taken out. Target p99 ≤ 50 ms.
//     Also printed: publish → success recorded in the store, measured in this process.
//  4. Memory, SQLite. RSS (process.memoryUsage().rss) after setup and after MEMORY_N deliveries,
//     both after global.gc() when node runs with --expose-gc, plus the peak, sampled every
//     500 ms. Events are published in batches of 1000, at most 5000 ahead of the recorded
//     successes, so the script never holds more than that in flight. Reported; no target.
//  5. Soak, SQLite then Postgres (two instances): SOAK deliveries with a retention of a second,
//     so the purge runs all along, publishing at most 2000 ahead of the recorded successes. At
//     every tenth it reads the time, the database's size (SQLite: the file and its WAL; Postgres:
//     pg_total_relation_size of keyhook's tables) and the RSS. Targets: deliveries/s over the last
//     tenth ≥ 0.9× the first tenth, with an interval from the five fifths of each tenth paired
//     in order; size and RSS, from the 10 % mark on, each reading within ±20 % of their median. `npm run bench` runs a default size (100 000 and 15 000); `npm run bench:soak`
//     the long one (1 000 000 and 300 000, retention 3 s), which takes tens of minutes.
//  6. Telemetry, SQLite. What OpenTelemetry costs delivery when an operator turns it on: the
//     throughput run of section 1 (TELEMETRY_N deliveries per run) with keyhook's telemetry off
//     (no provider: the API's no-ops), with a MeterProvider (metrics on), and with a MeterProvider
//     and a BasicTracerProvider (traces on too), through telemetry.mjs's SDK setup: a pull reader
//     not read during a run, a BatchSpanProcessor over an exporter that drops the spans. The
//     same warm-up and rounds as section 1, the order reversing every round (off, metrics,
//     traces / traces, metrics, off), so off and metrics are adjacent in every round. Target:
//     metrics on / off ≥ 0.97 (median of the per-round ratios); traces on / off is reported. After
//     each run a scrape checks that keyhook.deliveries counted N, and the spans exported are
//     counted (a core that records no spans shows 0 per delivery).
//
// The receiver (delivery-receiver.mjs) is a plain node:http server in a child process: it reads
// each body and answers 200 with an empty body at once; it checks headers, verifies every 64th
// signature, and counts distinct event ids (a delivery sent twice would show).
// What publish-matrix.mjs uses too (the event, the receiver, the database counters, the Postgres
// setup, the bare sender's body and the graphile-worker peer) is in peers.mjs.
//
// Needs the built packages (npm run bench builds them; or `npx turbo run build --filter=@keyhook/core
// --filter=@keyhook/store-sqlite --filter=@keyhook/store-postgres`). Postgres is skipped when it
// cannot be reached. Exits 0 always: a missed target prints FAIL, a broken section prints ERROR.
//
// Environment: BENCH_DELIVERIES (5000), BENCH_CONCURRENCY (16), BENCH_PUBLISH_LANES (CONCURRENCY),
// BENCH_PG_PUBLISH_LANES (BENCH_PUBLISH_LANES), BENCH_ROUNDS (5),
// BENCH_WARMUP_DELIVERIES (1000), BENCH_PREWARM (5000, or off), BENCH_PUBLISH (concurrent | upfront), BENCH_PG_URL
// (postgres://postgres@127.0.0.1:5432/test), BENCH_PG_CONCURRENCY (per worker, CONCURRENCY/2),
// BENCH_LATENCY_EVENTS (1000), BENCH_LATENCY_INTERVAL_MS (5), BENCH_MEMORY_DELIVERIES (100000),
// BENCH_SOAK_DELIVERIES (100000), BENCH_SOAK_PG_DELIVERIES (15000), BENCH_SOAK_RETENTION_MS (1000),
// BENCH_TELEMETRY_DELIVERIES (10000), BENCH_SECTIONS (throughput,postgres,latency,memory,soak,telemetry:
// any subset, comma-separated), BENCH_PEER (off: the Postgres section without the graphile-worker
// peer, for profiling keyhook alone).
import http from 'node:http';
import os from 'node:os';
import { setTimeout as sleep, setImmediate as yieldToLoop } from 'node:timers/promises';
import Database from 'better-sqlite3';
import {
  BARE_SECRET,
  countSucceeded,
  EVENT_TYPE,
  eventData,
  fixed,
  graphileRun,
  median,
  now,
  numberFrom,
  openPostgresInstances,
  openSqliteInstance,
  PG_URL,
  PUBLISH_YIELD_EVERY,
  percentile,
  postgresReachable,
  postSigned,
  runCleanups,
  runFigures,
  signedBody,
  startReceiver,
  Tally,
  TENANT,
} from './peers.mjs';
import { benchTelemetry } from './telemetry.mjs';

const N = numberFrom('BENCH_DELIVERIES', 5000);
const CONCURRENCY = numberFrom('BENCH_CONCURRENCY', 16);
const ROUNDS = numberFrom('BENCH_ROUNDS', 5);
const WARMUP = numberFrom('BENCH_WARMUP_DELIVERIES', 1000);
/**
 * Deliveries each keyhook instance and the graphile-worker sender make, and requests the bare
 * loop's agent sends, before the clock of a throughput run, so that each is timed as a sender
 * that has been up a while (its statements prepared, connections open, secrets opened, code
 * optimised), as publish-matrix.mjs does. As many as a run times: V8 is still compiling a new
 * instance's code for the first few thousand (BENCHMARKS.md, "How a figure is read"). `off`
 * times each from its first publish.
 */
const PREWARM = process.env.BENCH_PREWARM === 'off' ? 0 : numberFrom('BENCH_PREWARM', 5000);
const PUBLISH = process.env.BENCH_PUBLISH ?? 'concurrent';
const PG_CONCURRENCY = numberFrom('BENCH_PG_CONCURRENCY', Math.max(1, Math.round(CONCURRENCY / 2)));
const PG_WORKERS = 2;
const PUBLISH_LANES = numberFrom('BENCH_PUBLISH_LANES', CONCURRENCY);
const PG_PUBLISH_LANES = numberFrom('BENCH_PG_PUBLISH_LANES', PUBLISH_LANES);
const LATENCY_EVENTS = numberFrom('BENCH_LATENCY_EVENTS', 1000);
const LATENCY_INTERVAL_MS = numberFrom('BENCH_LATENCY_INTERVAL_MS', 5);
const LATENCY_WARMUP = 50;
const MEMORY_N = numberFrom('BENCH_MEMORY_DELIVERIES', 100_000);
const MEMORY_BATCH = 1000;
const MEMORY_MAX_AHEAD = 5000;
const SOAK_N = numberFrom('BENCH_SOAK_DELIVERIES', 100_000);
const SOAK_PG_N = numberFrom('BENCH_SOAK_PG_DELIVERIES', 15_000);
const SOAK_RETENTION_MS = numberFrom('BENCH_SOAK_RETENTION_MS', 1000);
const SOAK_MAX_AHEAD = 2000;
const SOAK_THROUGHPUT_TARGET = 0.9;
const SOAK_FLAT_WITHIN = 0.2;
// Twice section 1's N: a run of about 2 s, so that a 3 % difference is not one scheduler hiccup.
const TELEMETRY_N = numberFrom('BENCH_TELEMETRY_DELIVERIES', 10_000);
const SECTIONS = new Set(
  (process.env.BENCH_SECTIONS ?? 'throughput,postgres,latency,memory,soak,telemetry')
    .split(',')
    .map((s) => s.trim()),
);
if (PUBLISH !== 'concurrent' && PUBLISH !== 'upfront')
  throw new RangeError('BENCH_PUBLISH: concurrent | upfront');

const THROUGHPUT_TARGET = 0.6;
const PG_THROUGHPUT_TARGET = 0.25;
/**
 * Node CPU per delivery on Postgres, as a multiple of the bare loop's in the same round: the bare
 * loop's own cost moves between 150 and 300 µs from run to run and machine to machine with no
 * change to its code, so only the ratio compares.
 */
const PG_CPU_TARGET_RATIO = 2.0;
const PEER_TARGET = 3;
/** Delivery throughput with metrics on, against the same run with telemetry off. */
const METRICS_TARGET = 0.97;
const LATENCY_P99_TARGET_MS = 50;

const gc = () => globalThis.gc?.();

// ---------------------------------------------------------------------------------------------
// Backends: a keyhook (or two) with a webhook pointing at the receiver.

/**
 * What SQLite did for a run, per delivery: statements executed (better-sqlite3's Statement run,
 * get, all and iterate, counted by wrapping them), transactions committed (each outermost
 * transaction function, and each statement run outside one) and the event loop's time inside the
 * outermost transaction functions (their statements, the commit, and a checkpoint the commit
 * runs). SQLite runs in this process, so its CPU is part of this process's.
 */
const sqliteSent = { statements: 0, transactions: 0, transactionMs: 0 };
const sqliteUse = {
  reading() {
    if (!Database.prototype.transaction.counted) {
      const statement = Object.getPrototypeOf(new Database(':memory:').prepare('SELECT 1'));
      for (const method of ['run', 'get', 'all', 'iterate']) {
        const original = statement[method];
        statement[method] = function countedStatement(...args) {
          sqliteSent.statements++;
          if (!this.database.inTransaction) sqliteSent.transactions++;
          return original.apply(this, args);
        };
      }
      const transaction = Database.prototype.transaction;
      Database.prototype.transaction = function countedTransaction(fn) {
        const made = transaction.call(this, fn);
        const db = this;
        const outermost = (variant) =>
          function countedRun(...args) {
            if (db.inTransaction) return variant.apply(this, args);
            sqliteSent.transactions++;
            const started = performance.now();
            try {
              return variant.apply(this, args);
            } finally {
              sqliteSent.transactionMs += performance.now() - started;
            }
          };
        const counted = outermost(made);
        for (const kind of ['default', 'deferred', 'immediate', 'exclusive'])
          counted[kind] = outermost(made[kind]);
        return counted;
      };
      Database.prototype.transaction.counted = true;
    }
    return { ...sqliteSent };
  },
  since(before, n) {
    return {
      statements: (sqliteSent.statements - before.statements) / n,
      transactions: (sqliteSent.transactions - before.transactions) / n,
      transactionMicros: ((sqliteSent.transactionMs - before.transactionMs) * 1000) / n,
    };
  },
};

async function openSqlite(receiver, delivery, telemetry) {
  sqliteUse.reading(); // the counters wrap better-sqlite3 before the store prepares its statements
  const backend = await openSqliteInstance(receiver, delivery, {
    concurrency: CONCURRENCY,
    lanes: PUBLISH_LANES,
    telemetry,
  });
  return { ...backend, sqlite: sqliteUse };
}

/** Two keyhook instances on one fresh schema, each with its own store (its own pool). */
const openPostgres = (receiver, delivery) =>
  openPostgresInstances(receiver, delivery, {
    instances: PG_WORKERS,
    concurrency: PG_CONCURRENCY,
    lanes: PG_PUBLISH_LANES,
  });

// ---------------------------------------------------------------------------------------------
// The runs.

/** Publishes events first..first+count-1, round-robin over the keyhooks, in `lanes` loops. */
async function publishRange(keyhooks, first, count, lanes) {
  let next = first;
  const end = first + count;
  const lane = async () => {
    let since = 0;
    while (next < end) {
      const seq = next++;
      await keyhooks[seq % keyhooks.length].events.publish({
        tenantId: TENANT,
        type: EVENT_TYPE,
        data: eventData(seq, now()),
      });
      if (++since === PUBLISH_YIELD_EVERY) {
        since = 0;
        await yieldToLoop();
      }
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

async function keyhookRun(open, receiver, n) {
  const backend = await open(receiver);
  try {
    const tally = new Tally();
    for (const store of backend.stores) tally.watch(store);
    let workers = backend.keyhooks.map((keyhook) => keyhook.createWorker(backend.workerOptions));
    if (PREWARM > 0) {
      for (const worker of workers) worker.start();
      await publishRange(backend.keyhooks, 0, PREWARM, backend.publishLanes);
      await tally.reached(PREWARM);
      if (PUBLISH === 'upfront') {
        // Published first, then a worker that starts on the clock: its own code is warm by now.
        await Promise.all(workers.map((worker) => worker.stop()));
        workers = backend.keyhooks.map((keyhook) => keyhook.createWorker(backend.workerOptions));
      }
    }
    await receiver.reset(backend.secret);
    let publishMs;
    const database = backend.database ? await backend.database.reading() : null;
    const sqlite = backend.sqlite?.reading();
    const cpuBefore = process.cpuUsage();
    const receiverCpuBefore = await receiver.cpuMicros();
    const started = performance.now();
    const publish = publishRange(backend.keyhooks, 0, n, backend.publishLanes).then(() => {
      publishMs = performance.now() - started;
    });
    if (PUBLISH === 'upfront') await publish;
    for (const worker of workers) worker.start();
    await Promise.all([tally.reached(PREWARM + n), publish]);
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const receiverCpu = (await receiver.cpuMicros()) - receiverCpuBefore;
    const databaseUse = database ? await backend.database.since(database, n) : undefined;
    const sqliteUsed = sqlite ? backend.sqlite.since(sqlite, n) : undefined;
    await Promise.all(backend.keyhooks.map((keyhook) => keyhook.close()));
    const inStore = await countSucceeded(backend.stores[0], backend.webhookId);
    const received = await receiver.stats();
    // A scrape and a flush, after the clock: what the run recorded through OpenTelemetry.
    const telemetry = backend.telemetry && {
      deliveriesCounted: await backend.telemetry.counted('keyhook.deliveries'),
      spansPerDelivery: (await backend.telemetry.spans()) / (PREWARM + n),
    };
    const problems = [];
    if (inStore !== PREWARM + n) problems.push(`${inStore} succeeded in the store, expected ${PREWARM + n}`);
    if (telemetry && telemetry.deliveriesCounted !== PREWARM + n)
      problems.push(`keyhook.deliveries counted ${telemetry.deliveriesCounted}, expected ${PREWARM + n}`);
    if (received.distinct !== n) problems.push(`${received.distinct} distinct events received`);
    if (received.hits !== received.distinct) problems.push(`${received.hits - received.distinct} duplicates`);
    if (received.missingHeaders) problems.push(`${received.missingHeaders} requests without headers`);
    if (received.badSignatures)
      problems.push(`${received.badSignatures}/${received.verified} bad signatures`);
    if (tally.other) problems.push(`${tally.other} attempts recorded as not succeeded`);
    if (backend.logger.warnings.length)
      problems.push(`warnings: ${backend.logger.warnings.slice(0, 3).join('; ')}`);
    return runFigures(n, ms, cpu, receiverCpu, {
      publishMs,
      database: databaseUse,
      sqlite: sqliteUsed,
      telemetry,
      problems,
    });
  } finally {
    await backend.close();
  }
}

/** The bare loop: stringify, sign, POST through a keep-alive agent, CONCURRENCY at a time. */
async function bareRun(receiver, n, tag) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  await receiver.reset(BARE_SECRET);
  const post = (eventId, body, signature) => postSigned(agent, receiver.port, eventId, body, signature);
  let next = 0;
  let end = 0;
  let failures = 0;
  const lane = async () => {
    while (next < end) {
      const seq = next++;
      const id = `evt_${tag}${String(seq).padStart(26 - tag.length, '0')}`;
      const { body, signature } = signedBody(id, new Date().toISOString(), eventData(seq, now()));
      const status = await post(id, body, signature);
      if (status < 200 || status >= 300) failures++;
    }
  };
  end = PREWARM;
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  await receiver.reset(BARE_SECRET);
  end = PREWARM + n;
  const cpuBefore = process.cpuUsage();
  const receiverCpuBefore = await receiver.cpuMicros();
  const started = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const receiverCpu = (await receiver.cpuMicros()) - receiverCpuBefore;
  agent.destroy();
  const received = await receiver.stats();
  const problems = [];
  if (failures) problems.push(`${failures} non-2xx answers`);
  if (received.distinct !== n || received.hits !== n)
    problems.push(`${received.hits} hits, ${received.distinct} distinct`);
  if (received.badSignatures) problems.push(`${received.badSignatures} bad signatures`);
  return runFigures(n, ms, cpu, receiverCpu, { problems });
}

// ---------------------------------------------------------------------------------------------
// Statistics and printing.

const mb = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MB`;
const signed = (value, digits = 1) => `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`;

const summary = [];
const results = {};
const row = (metric, figure, target, verdict) => summary.push({ metric, figure, target, verdict });

/**
 * A target's verdict from the median of paired rounds: PASS or FAIL, or "within noise" when
 * the target lies inside the rounds' min–max (reported with its interval, not chased).
 */
function verdict(problems, met, low, high, target) {
  if (problems.length) return 'ERROR';
  if (met) return 'PASS';
  return low <= target && target <= high ? 'within noise' : 'FAIL';
}

async function section(name, body) {
  try {
    await body();
  } catch (error) {
    console.log(`\nERROR in ${name}: ${error?.stack ?? error}`);
    row(name, 'did not complete', '—', 'ERROR');
  }
}

/**
 * The soak: `n` deliveries with a retention of SOAK_RETENTION_MS, publishing at most
 * SOAK_MAX_AHEAD ahead of the recorded successes. At every tenth of `n` it reads the time, the
 * database's size and the RSS. Verdicts: throughput over the last tenth / the first tenth, and
 * size and RSS after the first tenth within ±SOAK_FLAT_WITHIN of their value at it.
 */
async function soak(label, open, n) {
  console.log(
    `\nsoak, ${label}: ${fixed(n)} deliveries, retention ${SOAK_RETENTION_MS} ms, at most ${SOAK_MAX_AHEAD} ahead`,
  );
  const backend = await open(receiver, { retentionMs: SOAK_RETENTION_MS });
  try {
    const tally = new Tally();
    for (const store of backend.stores) tally.watch(store);
    await receiver.reset(backend.secret);
    const workers = backend.keyhooks.map((keyhook) => keyhook.createWorker(backend.workerOptions));
    for (const worker of workers) worker.start();
    const fiftieth = Math.max(1, Math.floor(n / 50));
    const marks = [
      { recorded: 0, at: performance.now(), size: await backend.size(), rss: process.memoryUsage().rss },
    ];
    // Every fiftieth: the time only. The first and last tenth are five of them each, paired below.
    const slices = [{ recorded: 0, at: marks[0].at }];
    let published = 0;
    const publisher = (async () => {
      while (published < n) {
        const count = Math.min(MEMORY_BATCH, n - published);
        await publishRange(backend.keyhooks, published, count, backend.publishLanes);
        published += count;
        if (published - SOAK_MAX_AHEAD > tally.succeeded) await tally.reached(published - SOAK_MAX_AHEAD);
      }
    })();
    for (let j = 1; j <= 50; j++) {
      await tally.reached(j === 50 ? n : j * fiftieth);
      slices.push({ recorded: tally.succeeded, at: performance.now() });
      if (j % 5 !== 0) continue;
      const k = j / 5;
      const mark = {
        ...slices.at(-1),
        size: await backend.size(),
        rss: process.memoryUsage().rss,
      };
      marks.push(mark);
      const previous = marks.at(-2);
      console.log(
        `  ${String(k * 10).padStart(3)} %  recorded ${fixed(mark.recorded).padStart(9)}  ` +
          `${fixed(((mark.recorded - previous.recorded) / (mark.at - previous.at)) * 1000).padStart(6)}/s  ` +
          `db ${mb(mark.size).padStart(9)}  rss ${mb(mark.rss).padStart(9)}`,
      );
    }
    await publisher;
    const rate = (from, to) => ((to.recorded - from.recorded) / (to.at - from.at)) * 1000;
    const first = rate(marks[0], marks[1]);
    const last = rate(marks[9], marks[10]);
    // The interval: the i-th fifth of the last tenth against the i-th fifth of the first, five pairs.
    const pairs = Array.from(
      { length: 5 },
      (_, i) => rate(slices[45 + i], slices[46 + i]) / rate(slices[i], slices[i + 1]),
    );
    const [low, high] = [Math.min(...pairs), Math.max(...pairs)];
    // Flat: every reading from the 10 % mark on within ±SOAK_FLAT_WITHIN of their median, so
    // that no single reading (the first, taken before the purge's first VACUUM) sets the level.
    const spread = (key) => {
      const readings = marks.slice(1).map((mark) => mark[key]);
      const base = median(readings);
      const values = readings.map((value) => value / base);
      return { base, min: Math.min(...values), max: Math.max(...values) };
    };
    const size = spread('size');
    const rss = spread('rss');
    const flat = (range) => range.min >= 1 - SOAK_FLAT_WITHIN && range.max <= 1 + SOAK_FLAT_WITHIN;
    const received = await receiver.stats();
    const problems = [];
    if (received.distinct !== n) problems.push(`${received.distinct} distinct events received`);
    if (received.hits !== received.distinct) problems.push(`${received.hits - received.distinct} duplicates`);
    if (received.badSignatures) problems.push(`${received.badSignatures} bad signatures`);
    if (backend.logger.warnings.length)
      problems.push(`warnings: ${backend.logger.warnings.slice(0, 3).join('; ')}`);
    if (problems.length) console.log(`PROBLEMS: ${problems.join('; ')}`);
    const flatVerdict = (ok) => (problems.length ? 'ERROR' : ok ? 'PASS' : 'FAIL');
    results[`soak${label}`] = {
      deliveries: n,
      retentionMs: SOAK_RETENTION_MS,
      marks,
      first,
      last,
      pairs,
      size,
      rss,
      problems,
    };
    row(
      `soak ${label}, ${fixed(n)}: deliveries/s last tenth / first`,
      `${(last / first).toFixed(3)}× (${low.toFixed(2)}–${high.toFixed(2)} by fifths; ${fixed(first)} → ${fixed(last)}/s)`,
      `≥ ${SOAK_THROUGHPUT_TARGET}`,
      verdict(problems, last / first >= SOAK_THROUGHPUT_TARGET, low, high, SOAK_THROUGHPUT_TARGET),
    );
    row(
      `soak ${label}: database size from the 10 % mark`,
      `${size.min.toFixed(2)}–${size.max.toFixed(2)}× of their median ${mb(size.base)}`,
      `±${SOAK_FLAT_WITHIN * 100} %`,
      flatVerdict(flat(size)),
    );
    row(
      `soak ${label}: RSS from the 10 % mark`,
      `${rss.min.toFixed(2)}–${rss.max.toFixed(2)}× of their median ${mb(rss.base)}`,
      `±${SOAK_FLAT_WITHIN * 100} %`,
      flatVerdict(flat(rss)),
    );
  } finally {
    await backend.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Main.

console.log(
  `keyhook delivery benchmark — Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}`,
);
{
  const sample = JSON.stringify({
    id: `evt_${'0'.repeat(26)}`,
    type: EVENT_TYPE,
    createdAt: new Date().toISOString(),
    data: eventData(0, now()),
  });
  console.log(
    `event body ≈ ${sample.length} bytes; concurrency ${CONCURRENCY}; publishing ${PUBLISH} from ${PUBLISH_LANES} lanes (SQLite), ${PG_PUBLISH_LANES} (Postgres); ` +
      `global.gc ${globalThis.gc ? 'exposed' : 'NOT exposed (run node --expose-gc for memory readings after GC)'}`,
  );
}

const receiver = await startReceiver();
console.log(`receiver: pid ${receiver.pid}, ${receiver.url}`);

try {
  // 1 + 2: throughput.
  const variants = [{ key: 'bare', label: 'bare sign + POST', run: (n, tag) => bareRun(receiver, n, tag) }];
  if (SECTIONS.has('throughput')) {
    variants.push({
      key: 'sqlite',
      label: `keyhook, SQLite, 1 worker × ${CONCURRENCY}`,
      run: (n) => keyhookRun(openSqlite, receiver, n),
    });
  }
  if (SECTIONS.has('postgres')) {
    const unreachable = await postgresReachable();
    if (unreachable) {
      console.log(`Postgres skipped: ${PG_URL} cannot be reached (${unreachable})`);
      row('Postgres, 2 workers', `skipped (${unreachable})`, '—', 'SKIP');
    } else {
      variants.push({
        key: 'postgres',
        label: `keyhook, Postgres, ${PG_WORKERS} workers × ${PG_CONCURRENCY}`,
        run: (n) => keyhookRun(openPostgres, receiver, n),
      });
      if (process.env.BENCH_PEER !== 'off')
        variants.push({
          key: 'graphile',
          label: `graphile-worker, ${PG_WORKERS} runners × ${PG_CONCURRENCY}`,
          run: (n, tag) =>
            graphileRun(receiver, n, tag, {
              workers: PG_WORKERS,
              concurrency: PG_CONCURRENCY,
              lanes: PG_PUBLISH_LANES,
              prewarm: PREWARM,
            }),
        });
    }
  }
  if (variants.length > 1) {
    await section('throughput', async () => {
      console.log(`\nthroughput: ${N} deliveries per run, ${ROUNDS} rounds after a warm-up of ${WARMUP}`);
      for (const variant of variants) {
        variant.runs = [];
        const warm = await variant.run(WARMUP, 'W');
        if (warm.problems.length) console.log(`  warm-up ${variant.key}: ${warm.problems.join('; ')}`);
      }
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? variants : [...variants].reverse();
        for (const variant of order) {
          gc();
          const result = await variant.run(N, `R${round}`);
          variant.runs[round] = result;
          const extra =
            result.publishMs !== undefined
              ? `, publishing done at ${(result.publishMs / 1000).toFixed(2)} s`
              : '';
          console.log(
            `round ${round + 1}/${ROUNDS}  ${variant.label.padEnd(34)} ${fixed(result.perSecond).padStart(7)}/s` +
              `  (${(result.ms / 1000).toFixed(2)} s${extra}; ${result.cpuMicrosPerDelivery.toFixed(0)} µs CPU/delivery here, ` +
              `${result.receiverCpuMicrosPerDelivery.toFixed(0)} µs at the receiver` +
              (result.database
                ? `; per delivery ${result.database.roundTrips.toFixed(2)} round trips, ${result.database.transactions.toFixed(2)} transactions, ` +
                  `${result.database.cpuMicros === null ? 'n/a' : result.database.cpuMicros.toFixed(0)} µs Postgres CPU`
                : '') +
              ')' +
              (result.problems.length ? `  PROBLEMS: ${result.problems.join('; ')}` : ''),
          );
          if (result.sqlite) {
            console.log(
              `           per delivery: ${result.sqlite.statements.toFixed(2)} SQLite statements, ${result.sqlite.transactions.toFixed(2)} transactions, ${result.sqlite.transactionMicros.toFixed(0)} µs inside them`,
            );
          }
          if (result.database) {
            const kinds = Object.entries(result.database.byKind)
              .sort((a, b) => b[1] - a[1])
              .map(([kind, perDelivery]) => `${kind} ${perDelivery.toFixed(2)}`);
            console.log(`           round trips per delivery by statement: ${kinds.join(', ')}`);
          }
        }
      }
      const [bare] = variants;
      console.log('\nmedians over rounds');
      console.log(
        'variant                              deliveries/s   (min – max)          CPU µs/delivery   ratio to bare, median (min – max)',
      );
      for (const variant of variants) {
        const rates = variant.runs.map((r) => r.perSecond);
        const ratios = variant.runs.map((r, round) => r.perSecond / bare.runs[round].perSecond);
        variant.ratio = median(ratios);
        variant.ratios = ratios;
        variant.perSecond = median(rates);
        const cpus = variant.runs.map((r) => r.cpuMicrosPerDelivery);
        variant.cpu = median(cpus);
        variant.cpuRange = [Math.min(...cpus), Math.max(...cpus)];
        if (variant.runs[0].database) {
          const of = (key) => median(variant.runs.map((r) => r.database[key] ?? Number.NaN));
          variant.database = {
            roundTrips: of('roundTrips'),
            transactions: of('transactions'),
            cpuMicros: of('cpuMicros'),
          };
        }
        const range = `(${fixed(Math.min(...rates))} – ${fixed(Math.max(...rates))})`;
        const ratioText =
          variant === bare
            ? '—'
            : `${variant.ratio.toFixed(3)} (${Math.min(...ratios).toFixed(3)} – ${Math.max(...ratios).toFixed(3)})`;
        console.log(
          `${variant.label.padEnd(35)}  ${fixed(variant.perSecond).padStart(12)}   ${range.padEnd(19)}  ${variant.cpu.toFixed(0).padStart(15)}   ${ratioText}`,
        );
      }
      for (const variant of variants.filter((v) => v.database)) {
        const { roundTrips, transactions, cpuMicros } = variant.database;
        console.log(
          `${variant.label}, per delivery (medians): ${roundTrips.toFixed(2)} round trips, ${transactions.toFixed(2)} transactions, ` +
            `${Number.isNaN(cpuMicros) ? 'n/a (the server is not on this machine)' : `${cpuMicros.toFixed(0)} µs`} of Postgres CPU`,
        );
      }
      const problems = variants.flatMap((v) =>
        v.runs.flatMap((r) => r.problems.map((p) => `${v.key}: ${p}`)),
      );
      if (problems.length)
        console.log(`\nPROBLEMS (the figures above are suspect):\n  ${problems.join('\n  ')}`);
      results.throughput = variants.map(
        ({ key, label, runs, ratio, ratios, perSecond, cpu, cpuRange, database }) => ({
          key,
          label,
          runs,
          ratio,
          ratios,
          perSecond,
          cpuMicrosPerDelivery: cpu,
          cpuRange,
          database,
        }),
      );
      const suspect = problems.length ? ' (with PROBLEMS)' : '';
      const sqlite = variants.find((v) => v.key === 'sqlite');
      if (sqlite) {
        const [low, high] = [Math.min(...sqlite.ratios), Math.max(...sqlite.ratios)];
        row(
          'delivery throughput, SQLite: keyhook / bare',
          `${sqlite.ratio.toFixed(3)}× (${low.toFixed(3)}–${high.toFixed(3)}; ${fixed(sqlite.perSecond)}/s vs ${fixed(bare.perSecond)}/s)${suspect}`,
          `≥ ${THROUGHPUT_TARGET}×`,
          verdict(problems, sqlite.ratio >= THROUGHPUT_TARGET, low, high, THROUGHPUT_TARGET),
        );
      }
      const postgres = variants.find((v) => v.key === 'postgres');
      if (postgres) {
        const [low, high] = [Math.min(...postgres.ratios), Math.max(...postgres.ratios)];
        row(
          `delivery throughput, Postgres ${PG_WORKERS} instances / bare`,
          `${postgres.ratio.toFixed(3)}× (${low.toFixed(3)}–${high.toFixed(3)}; ${fixed(postgres.perSecond)}/s)${suspect}`,
          `≥ ${PG_THROUGHPUT_TARGET}×`,
          verdict(problems, postgres.ratio >= PG_THROUGHPUT_TARGET, low, high, PG_THROUGHPUT_TARGET),
        );
        const [cpuLow, cpuHigh] = postgres.cpuRange;
        const cpuRatios = postgres.runs.map(
          (r, round) => r.cpuMicrosPerDelivery / bare.runs[round].cpuMicrosPerDelivery,
        );
        const cpuRatio = median(cpuRatios);
        const [cpuRatioLow, cpuRatioHigh] = [Math.min(...cpuRatios), Math.max(...cpuRatios)];
        row(
          'Node CPU per delivery, Postgres / the bare loop’s, same round',
          `${cpuRatio.toFixed(2)}× (${cpuRatioLow.toFixed(2)}–${cpuRatioHigh.toFixed(2)}; ${postgres.cpu.toFixed(0)} µs, ` +
            `${cpuLow.toFixed(0)}–${cpuHigh.toFixed(0)}, vs ${bare.cpu.toFixed(0)} µs)${suspect}`,
          `≤ ${PG_CPU_TARGET_RATIO.toFixed(2)}×`,
          verdict(problems, cpuRatio <= PG_CPU_TARGET_RATIO, cpuRatioLow, cpuRatioHigh, PG_CPU_TARGET_RATIO),
        );
        const graphile = variants.find((v) => v.key === 'graphile');
        if (graphile) {
          const ratios = postgres.runs.map((r, round) => r.perSecond / graphile.runs[round].perSecond);
          const [low, high] = [Math.min(...ratios), Math.max(...ratios)];
          const ratio = median(ratios);
          row(
            'delivery throughput, keyhook on Postgres / graphile-worker sender',
            `${ratio.toFixed(2)}× (${low.toFixed(2)}–${high.toFixed(2)}; ${fixed(postgres.perSecond)}/s vs ${fixed(graphile.perSecond)}/s)${suspect}`,
            `≥ ${PEER_TARGET}×`,
            verdict(problems, ratio >= PEER_TARGET, low, high, PEER_TARGET),
          );
        }
        if (postgres.database && !Number.isNaN(postgres.database.cpuMicros)) {
          row('Postgres CPU per delivery', `${postgres.database.cpuMicros.toFixed(0)} µs`, '—', 'info');
        }
      }
    });
  }

  // 3: latency.
  if (SECTIONS.has('latency')) {
    await section('latency', async () => {
      console.log(
        `\nlatency: ${LATENCY_EVENTS} events, one every ${LATENCY_INTERVAL_MS} ms, after ${LATENCY_WARMUP} warm-up events (SQLite, 1 worker × ${CONCURRENCY})`,
      );
      const backend = await openSqlite(receiver);
      try {
        const [keyhook] = backend.keyhooks;
        const tally = new Tally();
        tally.watch(backend.stores[0]);
        const worker = keyhook.createWorker(backend.workerOptions);
        worker.start();
        const sentAt = new Map();
        const recordedMs = [];
        const publishCallMs = [];
        tally.onSuccess = (deliveryId) => {
          const at = sentAt.get(deliveryId);
          if (at !== undefined) recordedMs.push(now() - at);
        };
        const paced = async (first, count, measured) => {
          const start = performance.now();
          for (let i = 0; i < count; i++) {
            const wait = start + i * LATENCY_INTERVAL_MS - performance.now();
            if (wait > 0) await sleep(wait);
            const at = now();
            const published = await keyhook.events.publish({
              tenantId: TENANT,
              type: EVENT_TYPE,
              data: eventData(first + i, at),
            });
            if (measured) {
              publishCallMs.push(now() - at);
              sentAt.set(published.deliveries[0].id, at);
            }
          }
        };
        await receiver.reset(backend.secret, true);
        await paced(0, LATENCY_WARMUP, false);
        await tally.reached(LATENCY_WARMUP);
        const clock = await receiver.clockOffset();
        await receiver.reset(backend.secret, true);
        await paced(LATENCY_WARMUP, LATENCY_EVENTS, true);
        await tally.reached(LATENCY_WARMUP + LATENCY_EVENTS);
        const received = await receiver.stats();
        if (received.samples.length !== LATENCY_EVENTS) {
          throw new Error(`the receiver got ${received.samples.length} of ${LATENCY_EVENTS} events`);
        }
        const toReceiver = received.samples.map((ms) => ms - clock.offsetMs).sort((a, b) => a - b);
        const toRecorded = recordedMs.sort((a, b) => a - b);
        const calls = publishCallMs.sort((a, b) => a - b);
        const line = (label, sorted) =>
          console.log(
            `${label.padEnd(36)} p50 ${percentile(sorted, 50).toFixed(2).padStart(6)}  p90 ${percentile(sorted, 90).toFixed(2).padStart(6)}  ` +
              `p99 ${percentile(sorted, 99).toFixed(2).padStart(6)}  max ${sorted.at(-1).toFixed(2).padStart(7)} ms`,
          );
        console.log(
          `receiver clock − this clock: ${clock.offsetMs.toFixed(3)} ms (± ${(clock.rttMs / 2).toFixed(3)} ms, half the best IPC round trip); taken out below`,
        );
        line('publish → received at the receiver', toReceiver);
        line('publish → success recorded', toRecorded);
        line('the publish() call itself', calls);
        const p50 = percentile(toReceiver, 50);
        const p99 = percentile(toReceiver, 99);
        const problems = [];
        if (received.hits !== received.distinct)
          problems.push(`${received.hits - received.distinct} duplicates`);
        if (received.badSignatures) problems.push(`${received.badSignatures} bad signatures`);
        if (tally.other) problems.push(`${tally.other} attempts not succeeded`);
        if (backend.logger.warnings.length)
          problems.push(`warnings: ${backend.logger.warnings.slice(0, 3).join('; ')}`);
        if (problems.length) console.log(`PROBLEMS: ${problems.join('; ')}`);
        results.latency = {
          events: LATENCY_EVENTS,
          intervalMs: LATENCY_INTERVAL_MS,
          clock,
          toReceiver: { p50, p90: percentile(toReceiver, 90), p99, max: toReceiver.at(-1) },
          toRecorded: {
            p50: percentile(toRecorded, 50),
            p99: percentile(toRecorded, 99),
            max: toRecorded.at(-1),
          },
          publishCall: { p50: percentile(calls, 50), p99: percentile(calls, 99) },
          problems,
        };
        row('latency publish → received, p50', `${p50.toFixed(2)} ms`, '—', 'info');
        row(
          'latency publish → received, p99',
          `${p99.toFixed(2)} ms`,
          `≤ ${LATENCY_P99_TARGET_MS} ms`,
          problems.length ? 'ERROR' : p99 <= LATENCY_P99_TARGET_MS ? 'PASS' : 'FAIL',
        );
      } finally {
        await backend.close();
      }
    });
  }

  // 4: memory.
  if (SECTIONS.has('memory')) {
    await section('memory', async () => {
      console.log(
        `\nmemory: ${fixed(MEMORY_N)} deliveries on SQLite (1 worker × ${CONCURRENCY}), published in batches of ${MEMORY_BATCH}, at most ${MEMORY_MAX_AHEAD} ahead`,
      );
      const backend = await openSqlite(receiver);
      try {
        const [keyhook] = backend.keyhooks;
        const tally = new Tally();
        tally.watch(backend.stores[0]);
        await receiver.reset(backend.secret);
        const worker = keyhook.createWorker(backend.workerOptions);
        worker.start();
        gc();
        const start = process.memoryUsage();
        let peak = start.rss;
        const sampler = setInterval(() => {
          peak = Math.max(peak, process.memoryUsage().rss);
        }, 500);
        const started = performance.now();
        const marks = [];
        const markEvery = Math.max(MEMORY_BATCH, Math.round(MEMORY_N / 10 / MEMORY_BATCH) * MEMORY_BATCH);
        try {
          let published = 0;
          while (published < MEMORY_N) {
            const count = Math.min(MEMORY_BATCH, MEMORY_N - published);
            await publishRange([keyhook], published, count, 1);
            published += count;
            if (published - MEMORY_MAX_AHEAD > tally.succeeded)
              await tally.reached(published - MEMORY_MAX_AHEAD);
            if (published % markEvery === 0 || published === MEMORY_N) {
              const rss = process.memoryUsage().rss;
              peak = Math.max(peak, rss);
              marks.push({ published, recorded: tally.succeeded, rss });
              console.log(
                `  published ${fixed(published).padStart(7)}  recorded ${fixed(tally.succeeded).padStart(7)}  rss ${mb(rss).padStart(9)}  ` +
                  `${fixed((tally.succeeded / (performance.now() - started)) * 1000)}/s`,
              );
            }
          }
          await tally.reached(MEMORY_N);
        } finally {
          clearInterval(sampler);
        }
        const seconds = (performance.now() - started) / 1000;
        peak = Math.max(peak, process.memoryUsage().rss);
        gc();
        const end = process.memoryUsage();
        await keyhook.close();
        const inStore = await countSucceeded(backend.stores[0], backend.webhookId);
        const received = await receiver.stats();
        const problems = [];
        if (inStore !== MEMORY_N) problems.push(`${inStore} succeeded in the store`);
        if (received.distinct !== MEMORY_N) problems.push(`${received.distinct} distinct events received`);
        if (received.hits !== received.distinct)
          problems.push(`${received.hits - received.distinct} duplicates`);
        if (received.badSignatures) problems.push(`${received.badSignatures} bad signatures`);
        if (tally.other) problems.push(`${tally.other} attempts not succeeded`);
        if (backend.logger.warnings.length)
          problems.push(`warnings: ${backend.logger.warnings.slice(0, 3).join('; ')}`);
        console.log(
          `rss: start ${mb(start.rss)}, end ${mb(end.rss)} (${end.rss >= start.rss ? '+' : ''}${mb(end.rss - start.rss)}), ` +
            `peak ${mb(peak)}; heap used: start ${mb(start.heapUsed)}, end ${mb(end.heapUsed)}; ` +
            `${fixed(MEMORY_N / seconds)} deliveries/s over ${seconds.toFixed(1)} s` +
            (globalThis.gc
              ? ' (readings after global.gc())'
              : ' (no --expose-gc: readings without a GC first)'),
        );
        if (problems.length) console.log(`PROBLEMS: ${problems.join('; ')}`);
        results.memory = {
          deliveries: MEMORY_N,
          start,
          end,
          peakRss: peak,
          seconds,
          marks,
          gc: Boolean(globalThis.gc),
          problems,
        };
        row(
          `memory, ${fixed(MEMORY_N)} deliveries: RSS start → end (peak)`,
          `${mb(start.rss)} → ${mb(end.rss)} (peak ${mb(peak)})`,
          '—',
          problems.length ? 'ERROR' : 'info',
        );
        row(
          'memory: heap used after GC, start → end',
          `${mb(start.heapUsed)} → ${mb(end.heapUsed)}`,
          '—',
          'info',
        );
      } finally {
        await backend.close();
      }
    });
  }

  // 5: soak. Retention of a few seconds, so the purge runs all along; the three figures.
  if (SECTIONS.has('soak')) {
    const stores = [{ label: 'SQLite', open: openSqlite, n: SOAK_N }];
    const unreachable = await postgresReachable();
    if (unreachable) console.log(`\nsoak on Postgres skipped: ${unreachable}`);
    else stores.push({ label: 'Postgres', open: openPostgres, n: SOAK_PG_N });
    for (const { label, open, n } of stores) {
      await section(`soak (${label})`, () => soak(label, open, n));
    }
  }

  // 6: telemetry. Section 1's keyhook run with telemetry off, metrics on, and traces on too.
  if (SECTIONS.has('telemetry')) {
    await section('telemetry', async () => {
      console.log(
        `\ntelemetry: ${TELEMETRY_N} deliveries per run on SQLite (1 worker × ${CONCURRENCY}), ${ROUNDS} rounds after a warm-up of ${WARMUP}`,
      );
      // Fresh providers per run, as a fresh SQLite file: each run's scrape and span count are its own.
      const kinds = [
        { key: 'off', label: 'telemetry off', open: (r) => openSqlite(r) },
        { key: 'metrics', label: 'metrics on', open: (r) => openSqlite(r, undefined, benchTelemetry()) },
        {
          key: 'traces',
          label: 'metrics and traces on',
          open: (r) => openSqlite(r, undefined, benchTelemetry({ traces: true })),
        },
      ];
      for (const kind of kinds) {
        kind.runs = [];
        const warm = await keyhookRun(kind.open, receiver, WARMUP);
        if (warm.problems.length) console.log(`  warm-up ${kind.key}: ${warm.problems.join('; ')}`);
      }
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? kinds : [...kinds].reverse();
        for (const kind of order) {
          gc();
          const result = await keyhookRun(kind.open, receiver, TELEMETRY_N);
          kind.runs[round] = result;
          const spans = result.telemetry?.spansPerDelivery;
          console.log(
            `round ${round + 1}/${ROUNDS}  ${kind.label.padEnd(22)} ${fixed(result.perSecond).padStart(7)}/s` +
              `  (${(result.ms / 1000).toFixed(2)} s; ${result.cpuMicrosPerDelivery.toFixed(0)} µs CPU/delivery here` +
              (kind.key === 'traces' ? `; ${spans.toFixed(2)} spans per delivery` : '') +
              ')' +
              (result.problems.length ? `  PROBLEMS: ${result.problems.join('; ')}` : ''),
          );
        }
      }
      const [off] = kinds;
      console.log('\nmedians over rounds');
      console.log(
        'variant                  deliveries/s   (min – max)          CPU µs/delivery   on / off, median (min – max)   CPU off/on  CPU added per delivery',
      );
      for (const kind of kinds) {
        const rates = kind.runs.map((r) => r.perSecond);
        kind.perSecond = median(rates);
        kind.cpu = median(kind.runs.map((r) => r.cpuMicrosPerDelivery));
        kind.ratios = kind.runs.map((r, round) => r.perSecond / off.runs[round].perSecond);
        kind.ratio = median(kind.ratios);
        // Per round, against the off run of that round, like the ratio. The CPU ratio (off / on)
        // is what the throughput ratio would be if this process's CPU alone set the pace.
        const paired = (f) =>
          median(
            kind.runs.map((r, round) => f(r.cpuMicrosPerDelivery, off.runs[round].cpuMicrosPerDelivery)),
          );
        kind.cpuRatio = paired((on, offCpu) => offCpu / on);
        kind.cpuAdded = paired((on, offCpu) => on - offCpu);
        kind.spansPerDelivery = median(kind.runs.map((r) => r.telemetry?.spansPerDelivery ?? 0));
        const range = `(${fixed(Math.min(...rates))} – ${fixed(Math.max(...rates))})`;
        const versus =
          kind === off
            ? '—'
            : `${kind.ratio.toFixed(3)} (${Math.min(...kind.ratios).toFixed(3)} – ${Math.max(...kind.ratios).toFixed(3)})`;
        console.log(
          `${kind.label.padEnd(23)}  ${fixed(kind.perSecond).padStart(12)}   ${range.padEnd(19)}  ${kind.cpu.toFixed(0).padStart(15)}   ` +
            `${versus.padEnd(29)}  ${kind === off ? '—        ' : kind.cpuRatio.toFixed(3).padEnd(9)}   ${kind === off ? '—' : `${signed(kind.cpuAdded)} µs`}`,
        );
      }
      const problems = kinds.flatMap((k) => k.runs.flatMap((r) => r.problems.map((p) => `${k.key}: ${p}`)));
      if (problems.length)
        console.log(`\nPROBLEMS (the figures above are suspect):\n  ${problems.join('\n  ')}`);
      results.telemetry = kinds.map(
        ({ key, label, runs, ratio, ratios, perSecond, cpu, cpuRatio, cpuAdded, spansPerDelivery }) => ({
          key,
          label,
          runs,
          ratio,
          ratios,
          perSecond,
          cpuMicrosPerDelivery: cpu,
          cpuRatio,
          cpuAddedMicros: cpuAdded,
          spansPerDelivery,
        }),
      );
      const suspect = problems.length ? ' (with PROBLEMS)' : '';
      const [, metrics, traces] = kinds;
      const interval = (kind) => [Math.min(...kind.ratios), Math.max(...kind.ratios)];
      const [low, high] = interval(metrics);
      row(
        'delivery throughput, SQLite: metrics on / off',
        `${metrics.ratio.toFixed(3)}× (${low.toFixed(3)}–${high.toFixed(3)}; ${fixed(metrics.perSecond)}/s vs ${fixed(off.perSecond)}/s; CPU ${metrics.cpuRatio.toFixed(3)}×, ${signed(metrics.cpuAdded)} µs)${suspect}`,
        `≥ ${METRICS_TARGET}×`,
        verdict(problems, metrics.ratio >= METRICS_TARGET, low, high, METRICS_TARGET),
      );
      const [tracesLow, tracesHigh] = interval(traces);
      row(
        'delivery throughput, SQLite: metrics and traces on / off',
        `${traces.ratio.toFixed(3)}× (${tracesLow.toFixed(3)}–${tracesHigh.toFixed(3)}; ${fixed(traces.perSecond)}/s; CPU ${traces.cpuRatio.toFixed(3)}×, ${signed(traces.cpuAdded)} µs; ` +
          `${traces.spansPerDelivery.toFixed(2)} spans per delivery)${suspect}`,
        '—',
        problems.length ? 'ERROR' : 'info',
      );
    });
  }
} finally {
  receiver.close();
  await runCleanups();
}

console.log('\nsummary');
const widths = ['metric', 'figure', 'target', 'verdict'].map((key) =>
  Math.max(key.length, ...summary.map((r) => String(r[key]).length)),
);
const pad = (cells) => `| ${cells.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ')} |`;
console.log(pad(['metric', 'figure', 'target', 'verdict']));
console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
for (const r of summary) console.log(pad([r.metric, r.figure, r.target, r.verdict]));
const failed = summary.filter((r) => r.verdict === 'FAIL' || r.verdict === 'ERROR');
console.log(
  failed.length ? `\n${failed.map((r) => `${r.verdict}: ${r.metric}`).join('\n')}` : '\nall targets met',
);
console.log(
  `json ${JSON.stringify({ deliveries: N, concurrency: CONCURRENCY, rounds: ROUNDS, publish: PUBLISH, summary, results })}`,
);
process.exit(0);
