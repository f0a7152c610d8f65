// node benchmarks/publish-matrix.mjs: keyhook on Postgres when a host publishes from a few
// requests at a time, not only from many.
//
// One cell per number of publishers in flight (BENCH_MATRIX_PUBLISHERS, default 1,4,16,64) and
// number of keyhook instances on one Postgres (BENCH_MATRIX_INSTANCES, 1,2). In each cell, four
// runs of BENCH_MATRIX_EVENTS events (~1 KB, as in delivery.mjs), each from that many publisher
// loops, each loop awaiting its publish before the next (a request handler that publishes):
//   - keyhook: the instances on one fresh schema, a worker each of BENCH_MATRIX_CONCURRENCY /
//     instances (16 in all by default), publishes round-robin over the instances. The clock runs
//     from the first publish to the last success recorded. Each publish's latency is the time its
//     `events.publish()` took; end to end is publish to the receiver's end of body (the receiver's
//     clock, with the offset to this one taken out, as delivery.mjs's latency section does).
//   - the graphile-worker sender (peers.mjs): one runner per instance, the same concurrency, addJob
//     per event from the same publisher loops. Deliveries/s by the same clock.
//   - the bare transaction: what the host would write without keyhook, on a pool of one connection
//     per publisher: BEGIN, INSERT the event row, INSERT one delivery row, COMMIT, on two plain
//     tables of a fresh schema with primary keys only. Its latency is connect to COMMIT answered.
//   - bare + sender: the bare transaction again, while a bare sender in the same process delivers
//     each committed event as a host without keyhook would at the least (sign, POST through a
//     keep-alive agent with the same concurrency, one UPDATE recording the success). Deliveries/s
//     by keyhook's clock: the least any sender can do on the same machine.
// Every run sends BENCH_MATRIX_PREWARM (200) events through its fresh pools before its clock, so
// each is timed as a host that has been up a while, its connections open and statements prepared.
// Rounds: BENCH_MATRIX_ROUNDS (3) after a warm-up of each kind of run; the order of all runs of a
// round (cells and kinds) reverses every round. Every ratio is taken within one round and cell
// (keyhook against the runs beside it), and the verdict is the median of those ratios, printed
// with their min–max. Targets, per cell: keyhook's deliveries/s ≥ 1.0× bare + sender's; keyhook's
// publish p50 ≤ 1.25× bare + sender's; publish p99 ≤ 3× the bare transaction's; end-to-end p99 ≤
// 50 ms up to 16 publishers; keyhook / graphile-worker deliveries/s ≥ 3 from 16 publishers up.
// Prints one markdown table (BENCHMARKS.md's) and the verdicts.
//
// A quick run: BENCH_MATRIX_EVENTS=300 BENCH_MATRIX_ROUNDS=1 BENCH_MATRIX_PUBLISHERS=1,16
// BENCH_MATRIX_INSTANCES=1. BENCH_PEER=off leaves graphile-worker out. Needs the built packages
// and Postgres (BENCH_PG_URL, postgres://postgres@127.0.0.1:5432/test); skipped without it.
// Exits 0 always: a missed target prints FAIL.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import {
  BARE_SECRET,
  cleanups,
  countSucceeded,
  dropSchema,
  EVENT_TYPE,
  eventData,
  fixed,
  graphileRun,
  loadPg,
  median,
  now,
  numberFrom,
  openPostgresInstances,
  PG_URL,
  percentile,
  postgresCpu,
  postgresReachable,
  postSigned,
  runCleanups,
  runFigures,
  signBody,
  startReceiver,
  Tally,
  TENANT,
} from './peers.mjs';

const listFrom = (name, fallback) =>
  (process.env[name] ?? fallback).split(',').map((item) => {
    const value = Number(item.trim());
    if (!Number.isInteger(value) || value <= 0)
      throw new RangeError(`${name}: positive integers, comma-separated`);
    return value;
  });

const PUBLISHERS = listFrom('BENCH_MATRIX_PUBLISHERS', '1,4,16,64');
const INSTANCES = listFrom('BENCH_MATRIX_INSTANCES', '1,2');
const EVENTS = numberFrom('BENCH_MATRIX_EVENTS', 1000);
const ROUNDS = numberFrom('BENCH_MATRIX_ROUNDS', 3);
const WARMUP = numberFrom('BENCH_MATRIX_WARMUP', 300);
const PREWARM = numberFrom('BENCH_MATRIX_PREWARM', 200);
const CONCURRENCY = numberFrom('BENCH_MATRIX_CONCURRENCY', 16);
const PEER = process.env.BENCH_PEER !== 'off';
/** The bare sender's pool: keyhook's default poolSize. */
const SENDER_POOL = 10;

const SENDER_RATE_TARGET = 1.0;
const SENDER_P50_TARGET = 1.25;
const PEER_TARGET = 3;
const PEER_PUBLISHERS = 16;
const P99_TARGET = 3;
const E2E_P99_TARGET_MS = 50;
const E2E_PUBLISHERS = 16;

const sorted = (values) => Float64Array.from(values).sort();

/** Runs `publish(seq)` for seq 0..n-1 from `lanes` loops, each awaiting its own; returns each one's ms. */
async function timedLanes(n, lanes, publish) {
  const took = [];
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const seq = next++;
      const started = performance.now();
      await publish(seq);
      took.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: lanes }, lane));
  return sorted(took);
}

/** keyhook: `instances` instances on one schema, publishing from `lanes` loops while the workers deliver. */
async function keyhookRun(receiver, clock, n, lanes, instances) {
  const backend = await openPostgresInstances(receiver, undefined, {
    instances,
    concurrency: Math.max(1, Math.round(CONCURRENCY / instances)),
    lanes,
  });
  try {
    const tally = new Tally();
    for (const store of backend.stores) tally.watch(store);
    await receiver.reset(backend.secret, true);
    const workers = backend.keyhooks.map((keyhook) => keyhook.createWorker(backend.workerOptions));
    for (const worker of workers) worker.start();
    const publish = (seq) =>
      backend.keyhooks[seq % instances].events.publish({
        tenantId: TENANT,
        type: EVENT_TYPE,
        data: eventData(seq, now()),
      });
    // PREWARM events before the clock, as bareRun sends them: connections and prepared statements made.
    await timedLanes(PREWARM, lanes, (seq) => publish(seq));
    await tally.reached(PREWARM);
    await receiver.reset(backend.secret, true);
    const database = await backend.database.reading();
    const cpuBefore = process.cpuUsage();
    const receiverCpuBefore = await receiver.cpuMicros();
    const started = performance.now();
    const publishes = await timedLanes(n, lanes, (seq) => publish(seq));
    await tally.reached(PREWARM + n);
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const receiverCpu = (await receiver.cpuMicros()) - receiverCpuBefore;
    const databaseUse = await backend.database.since(database, n);
    await Promise.all(backend.keyhooks.map((keyhook) => keyhook.close()));
    const inStore = await countSucceeded(backend.stores[0], backend.webhookId);
    const received = await receiver.stats();
    const problems = [];
    if (inStore !== PREWARM + n) problems.push(`${inStore} succeeded in the store, expected ${PREWARM + n}`);
    if (received.distinct !== n) problems.push(`${received.distinct} distinct events received`);
    if (received.hits !== received.distinct) problems.push(`${received.hits - received.distinct} duplicates`);
    if (tally.other) problems.push(`${tally.other} attempts recorded as not succeeded`);
    if (backend.logger.warnings.length)
      problems.push(`warnings: ${backend.logger.warnings.slice(0, 3).join('; ')}`);
    return runFigures(n, ms, cpu, receiverCpu, {
      publishes,
      endToEnd: sorted(received.samples.map((sample) => sample - clock.offsetMs)),
      database: databaseUse,
      problems,
    });
  } finally {
    await backend.close();
  }
}

/**
 * The bare sender: what a sender without keyhook does at the least for each committed event.
 * It signs the stored body, POSTs it to the receiver through a keep-alive agent (CONCURRENCY in
 * flight) and records the success with one UPDATE of the delivery row, on a pool of its own of
 * keyhook's default size. An event handed to `send` goes out on the next turn of the event loop,
 * after the publish that handed it has returned, as keyhook's worker takes what a publish leased.
 */
function bareSender(receiver, pool, deliveries) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const waiting = [];
  let inFlight = 0;
  let settled = 0;
  let failures = 0;
  let wanted = Number.POSITIVE_INFINITY;
  let onReached = () => {};
  const attempt = async ({ id, body }) => {
    const status = await postSigned(agent, receiver.port, id, body, signBody(body));
    if (status < 200 || status >= 300) failures++;
    const result = await pool.query(
      `UPDATE ${deliveries} SET status = 'succeeded', due_at = NULL WHERE id = $1 AND status = 'pending'`,
      [`dlv_${id.slice(4)}`],
    );
    if (result.rowCount !== 1) failures++;
  };
  const pump = () => {
    while (inFlight < CONCURRENCY && waiting.length > 0) {
      inFlight++;
      void attempt(waiting.shift())
        .catch((error) => {
          failures++;
          console.log(`bare sender: ${error?.message ?? error}`);
        })
        .then(() => {
          inFlight--;
          if (++settled >= wanted) onReached();
          pump();
        });
    }
  };
  return {
    send(id, body) {
      waiting.push({ id, body });
      setImmediate(pump);
    },
    /** Resolves once `n` events have been sent and recorded (or have failed, counted in `failures`). */
    reached(n) {
      if (settled >= n) return Promise.resolve();
      wanted = n;
      return new Promise((resolve) => {
        onReached = resolve;
      });
    },
    get failures() {
      return failures;
    },
    close: () => agent.destroy(),
  };
}

/**
 * The bare transaction: BEGIN, the event row, one delivery row, COMMIT, from `lanes` loops. With
 * `receiver`, "bare + sender": the same transactions while bareSender delivers each committed
 * event, so they share the machine with delivery as keyhook's publishes do; the clock then runs to
 * the last success recorded. keyhook's rate and publish p50 are judged against this run's.
 */
async function bareRun(n, lanes, tag, receiver) {
  const { pg, checkOut, withTransaction } = await loadPg();
  const schema = `bare_bench_${randomBytes(6).toString('hex')}`;
  const drop = () => dropSchema(schema);
  cleanups.add(drop);
  const pool = new pg.Pool({ connectionString: PG_URL, max: lanes });
  const senderPool = receiver ? new pg.Pool({ connectionString: PG_URL, max: SENDER_POOL }) : null;
  const sender = receiver ? bareSender(receiver, senderPool, `"${schema}".deliveries`) : null;
  try {
    await pool.query(`CREATE SCHEMA "${schema}";
      CREATE TABLE "${schema}".events (tenant_id text, id text, type text NOT NULL, payload text NOT NULL,
        created_at timestamptz NOT NULL, PRIMARY KEY (tenant_id, id));
      CREATE TABLE "${schema}".deliveries (id text PRIMARY KEY, tenant_id text NOT NULL, event_id text NOT NULL,
        endpoint_id text NOT NULL, status text NOT NULL, due_at timestamptz, created_at timestamptz NOT NULL)`);
    // Every connection open before the clock, as keyhook's pools are once warm.
    for (const [each, size] of [
      [pool, lanes],
      [senderPool, SENDER_POOL],
    ]) {
      if (!each) continue;
      const clients = await Promise.all(Array.from({ length: size }, () => checkOut(each)));
      for (const client of clients) client.release();
    }
    const transaction = async (seq, prefix) => {
      const id = `evt_${prefix}${String(seq).padStart(26 - prefix.length, '0')}`;
      const createdAt = new Date();
      const payload = JSON.stringify({ id, type: EVENT_TYPE, createdAt, data: eventData(seq, now()) });
      await withTransaction(pool, async (client) => {
        await client.query(`INSERT INTO "${schema}".events VALUES ($1, $2, $3, $4, $5)`, [
          TENANT,
          id,
          EVENT_TYPE,
          payload,
          createdAt,
        ]);
        await client.query(`INSERT INTO "${schema}".deliveries VALUES ($1, $2, $3, $4, 'pending', $5, $5)`, [
          `dlv_${id.slice(4)}`,
          TENANT,
          id,
          'ep_bench',
          createdAt,
        ]);
      });
      sender?.send(id, Buffer.from(payload));
    };
    await timedLanes(PREWARM, lanes, (seq) => transaction(seq, `${tag}P`));
    await sender?.reached(PREWARM);
    if (receiver) await receiver.reset(BARE_SECRET);
    const postgresBefore = sender ? await postgresCpu() : null;
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const transactions = await timedLanes(n, lanes, (seq) => transaction(seq, tag));
    if (!sender) return { transactions, problems: [] };
    await sender.reached(PREWARM + n);
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const postgresAfter = await postgresCpu();
    const problems = [];
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM "${schema}".deliveries WHERE status = 'succeeded'`,
    );
    if (rows[0].n !== PREWARM + n)
      problems.push(`${rows[0].n} succeeded in the table, expected ${PREWARM + n}`);
    if (sender.failures) problems.push(`${sender.failures} failed sends or records`);
    const received = await receiver.stats();
    if (received.distinct !== n || received.hits !== n)
      problems.push(`${received.hits} hits, ${received.distinct} distinct`);
    if (received.badSignatures) problems.push(`${received.badSignatures} bad signatures`);
    return {
      transactions,
      perSecond: (n / ms) * 1000,
      cpuMicrosPerDelivery: (cpu.user + cpu.system) / n,
      postgresMicrosPerDelivery:
        postgresBefore === null || postgresAfter === null ? null : (postgresAfter - postgresBefore) / n,
      problems,
    };
  } finally {
    sender?.close();
    await senderPool?.end();
    await pool.end();
    cleanups.delete(drop);
    await drop();
  }
}

const ratioOf = (runs, figure) => runs.map(figure);
const range = (values) =>
  `${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`;
const ms = (value) => value.toFixed(2);
const cpuPer = (node, postgres) =>
  `CPU per delivery ${fixed(node)} µs here, ${postgres === null ? '—' : `${fixed(postgres)} µs`} Postgres`;

function verdict(values, target, atMost) {
  const mid = median(values);
  const low = Math.min(...values);
  const high = Math.max(...values);
  if (atMost ? mid <= target : mid >= target) return 'PASS';
  return low <= target && target <= high ? 'within noise' : 'FAIL';
}

const unreachable = await postgresReachable();
if (unreachable) {
  console.log(`publish matrix skipped: ${PG_URL} cannot be reached (${unreachable})`);
  process.exit(0);
}

console.log(
  `keyhook publish matrix — Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}`,
);
console.log(
  `${EVENTS} events per run, ${ROUNDS} rounds; publishers ${PUBLISHERS.join(', ')}; instances ${INSTANCES.join(', ')}; ` +
    `${CONCURRENCY} worker slots in all per cell`,
);
const receiver = await startReceiver();
const failures = [];
try {
  const clock = await receiver.clockOffset();
  console.log(`receiver clock offset ${clock.offsetMs.toFixed(3)} ms (± ${(clock.rttMs / 2).toFixed(3)} ms)`);
  const cells = [];
  for (const instances of INSTANCES)
    for (const publishers of PUBLISHERS) cells.push({ instances, publishers, rounds: [] });
  const kinds = [
    { key: 'bare', run: (cell, n, tag) => bareRun(n, cell.publishers, tag) },
    { key: 'sender', run: (cell, n, tag) => bareRun(n, cell.publishers, tag, receiver) },
    { key: 'keyhook', run: (cell, n) => keyhookRun(receiver, clock, n, cell.publishers, cell.instances) },
  ];
  if (PEER)
    kinds.push({
      key: 'graphile',
      run: (cell, n, tag) =>
        graphileRun(receiver, n, tag, {
          workers: cell.instances,
          concurrency: Math.max(1, Math.round(CONCURRENCY / cell.instances)),
          lanes: cell.publishers,
          prewarm: PREWARM,
        }),
    });
  for (const kind of kinds) {
    const warm = await kind.run({ instances: 1, publishers: 16 }, WARMUP, 'W');
    if (warm.problems.length) console.log(`warm-up ${kind.key}: ${warm.problems.join('; ')}`);
  }
  const runs = cells.flatMap((cell) => kinds.map((kind) => ({ cell, kind })));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? runs : [...runs].reverse();
    for (const { cell, kind } of order) {
      globalThis.gc?.();
      const result = await kind.run(cell, EVENTS, `R${round}`);
      cell.rounds[round] ??= {};
      cell.rounds[round][kind.key] = result;
      if (result.problems.length)
        failures.push(`${kind.key} ${cell.publishers}×${cell.instances}: ${result.problems.join('; ')}`);
      const transaction = () =>
        `transaction p50 ${ms(percentile(result.transactions, 50))} ms, p99 ${ms(percentile(result.transactions, 99))} ms`;
      const figures =
        kind.key === 'bare'
          ? transaction()
          : kind.key === 'sender'
            ? `${fixed(result.perSecond)}/s, ${transaction()}, ${cpuPer(result.cpuMicrosPerDelivery, result.postgresMicrosPerDelivery)}`
            : kind.key === 'keyhook'
              ? `${fixed(result.perSecond)}/s, publish p50 ${ms(percentile(result.publishes, 50))} ms, p99 ${ms(percentile(result.publishes, 99))} ms, ` +
                `end to end p50 ${ms(percentile(result.endToEnd, 50))} ms, p99 ${ms(percentile(result.endToEnd, 99))} ms, ` +
                `${result.database.roundTrips.toFixed(2)} round trips per delivery, ${cpuPer(result.cpuMicrosPerDelivery, result.database.cpuMicros)}`
              : `${fixed(result.perSecond)}/s`;
      console.log(
        `round ${round + 1}/${ROUNDS}  ${String(cell.publishers).padStart(2)} publishers, ${cell.instances} instance${cell.instances > 1 ? 's' : ' '}  ${kind.key.padEnd(8)} ${figures}` +
          (result.problems.length ? `  PROBLEMS: ${result.problems.join('; ')}` : ''),
      );
    }
  }

  // One row per cell: medians of the per-round figures and ratios, min–max in brackets.
  const table = [
    [
      'publishers',
      'instances',
      'keyhook /s',
      'bare + sender /s',
      'graphile /s',
      `keyhook / bare + sender (≥ ${SENDER_RATE_TARGET})`,
      `keyhook / graphile (≥ ${PEER_TARGET} from ${PEER_PUBLISHERS})`,
      'publish p50 ms',
      'bare + sender p50 ms',
      `p50 / bare + sender p50 (≤ ${SENDER_P50_TARGET})`,
      'publish p99 ms',
      'bare p99 ms',
      `p99 / bare (≤ ${P99_TARGET})`,
      'end to end p50 ms',
      `end to end p99 ms (≤ ${E2E_P99_TARGET_MS} at ≤ ${E2E_PUBLISHERS})`,
    ],
  ];
  const verdicts = [];
  for (const cell of cells) {
    const r = cell.rounds;
    const k = (f) => median(r.map((x) => f(x.keyhook)));
    const over = (figure, base) => ratioOf(r, (x) => figure(x.keyhook) / base(x));
    const p = (q) => (run) => percentile(run.publishes ?? run.transactions, q);
    const perSecond = (run) => run.perSecond;
    const toSender = over(perSecond, (x) => x.sender.perSecond);
    const p50 = over(p(50), (x) => percentile(x.sender.transactions, 50));
    const p99 = over(p(99), (x) => percentile(x.bare.transactions, 99));
    const e2e = r.map((x) => percentile(x.keyhook.endToEnd, 99));
    const peer = PEER ? over(perSecond, (x) => x.graphile.perSecond) : null;
    const name = `${cell.publishers} publishers, ${cell.instances} instance${cell.instances > 1 ? 's' : ''}`;
    const judge = (label, values, target, atMost) =>
      verdicts.push([
        name,
        label,
        range(values),
        `${atMost ? '≤' : '≥'} ${target}`,
        verdict(values, target, atMost),
      ]);
    judge('deliveries/s / bare + sender', toSender, SENDER_RATE_TARGET, false);
    judge('publish p50 / bare + sender', p50, SENDER_P50_TARGET, true);
    judge('publish p99 / bare', p99, P99_TARGET, true);
    if (cell.publishers <= E2E_PUBLISHERS) judge('end-to-end p99 ms', e2e, E2E_P99_TARGET_MS, true);
    if (peer && cell.publishers >= PEER_PUBLISHERS)
      judge('deliveries/s / graphile-worker', peer, PEER_TARGET, false);
    table.push([
      cell.publishers,
      cell.instances,
      fixed(k(perSecond)),
      fixed(median(r.map((x) => x.sender.perSecond))),
      PEER ? fixed(median(r.map((x) => x.graphile.perSecond))) : '—',
      range(toSender),
      peer ? range(peer) : '—',
      ms(k(p(50))),
      ms(median(r.map((x) => percentile(x.sender.transactions, 50)))),
      range(p50),
      ms(k(p(99))),
      ms(median(r.map((x) => percentile(x.bare.transactions, 99)))),
      range(p99),
      ms(k((x) => percentile(x.endToEnd, 50))),
      range(e2e),
    ]);
  }
  const print = (rows) => {
    const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
    const line = (row) => `| ${row.map((cell, i) => String(cell).padEnd(widths[i])).join(' | ')} |`;
    console.log(line(rows[0]));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const row of rows.slice(1)) console.log(line(row));
  };
  console.log(`\nmedians over ${ROUNDS} rounds (ratios: median of the per-round ratios, min–max)\n`);
  print(table);
  console.log('');
  print([['cell', 'figure', 'keyhook', 'target', 'verdict'], ...verdicts]);
  const missed = verdicts.filter((v) => v[4] === 'FAIL');
  for (const problem of failures) console.log(`PROBLEM: ${problem}`);
  console.log(
    missed.length ? `\nFAIL: ${missed.length} targets missed` : '\nall targets met or within noise',
  );
} catch (error) {
  console.log(`\nERROR: ${error?.stack ?? error}`);
} finally {
  receiver.close();
  await runCleanups();
}
