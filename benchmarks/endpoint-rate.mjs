// node benchmarks/endpoint-rate.mjs: does an endpoint's deliveryRate hold, and what does it cost the others?
//
// On Postgres (a fresh schema, dropped at the end; skipped when nothing answers at BENCH_PG_URL),
// with a receiver in a child process (arrivals-receiver.mjs), three parts:
//   1. BENCH_RATE_DELIVERIES (10,000) failed deliveries of an endpoint limited to
//      BENCH_RATE_PER_SECOND (50/s), written straight into the tables, queued again by
//      `deliveries.recover()` with one worker running: the arrival rate at the receiver (count − 1
//      over the time from the first arrival to the last), the per-second counts' median and max,
//      and the busiest 1 s window. Target: the rate within ±10 % of the limit.
//   2. An unlimited endpoint's throughput beside a limited one's backlog / its throughput alone:
//      each round recovers 2,000 failed deliveries of the unlimited endpoint, once alone and once
//      right after 1,000 of the limited endpoint's (the order alternating), and times them from
//      the recover call to the last arrival. The median of the per-round ratios, with min–max,
//      over BENCH_ROUNDS (6). Target ≥ 0.9.
//   3. Two instances on the one schema, each with its worker, and 1,500 deliveries of a limited
//      endpoint recovered: the busiest 1 s window at the receiver, and the overall rate. Target:
//      the busiest window ≤ the limit + 1.
//
// Environment: BENCH_RATE_DELIVERIES (10000), BENCH_RATE_PER_SECOND (50), BENCH_ROUNDS (6),
// BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/test).
import { createKeyhook, generateEncryptionKey, silentLogger } from '@keyhook/core';
import { createPostgresStore } from '@keyhook/store-postgres';
import pg from 'pg';
import { startArrivalsReceiver } from './arrivals-receiver.mjs';

await main();

async function main() {
  const DELIVERIES = Number(process.env.BENCH_RATE_DELIVERIES ?? 10_000);
  const PER_SECOND = Number(process.env.BENCH_RATE_PER_SECOND ?? 50);
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
  const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const TENANT = 'bench';
  const FREE = 2_000;
  const BESIDE = 1_000;
  const TWO = 1_500;

  console.log(`keyhook endpoint-rate benchmark — Node ${process.version}`);
  const admin = new pg.Client({ connectionString: PG_URL });
  try {
    await admin.connect();
  } catch {
    console.log(`postgres: skipped (no server at ${PG_URL})`);
    return;
  }
  const schema = `keyhook_rate_${process.pid}`;
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);

  const receiver = await startArrivalsReceiver();
  const { arrivals, url } = receiver;

  const open = () => createPostgresStore({ connectionString: PG_URL, schema, logger: silentLogger });
  const encryptionKey = generateEncryptionKey();
  const keyhookOn = (store) =>
    createKeyhook({
      eventCatalog: { 'run.completed': {} },
      store,
      adminSession: { secret: 'endpoint-rate-bench-admin-secret-0123456789' },
      encryptionKey,
      logger: silentLogger,
      mode: 'development',
    });
  const store = await open();
  const keyhook = keyhookOn(store);
  const stores = [store];
  const keyhooks = [keyhook];
  const workers = [];
  await admin.query(`SET search_path TO "${schema}"`);

  let batch = 0;
  /** Writes `count` failed deliveries of the webhook (with their events), an hour old. */
  async function failed(webhookId, count) {
    const label = `b${++batch}_`;
    const t = new Date(Date.now() - 3_600_000);
    await admin.query(
      `INSERT INTO keyhook_events (tenant_id, id, type, payload, created_at)
       SELECT $2, 'evt_' || $4 || lpad(i::text, 6, '0'), 'run.completed', '{"n":1}', $3::timestamptz + i * interval '1 ms'
       FROM generate_series(0, $1 - 1) AS i`,
      [count, TENANT, t, label],
    );
    await admin.query(
      `INSERT INTO keyhook_deliveries (id, tenant_id, webhook_id, event_id, event_type, status, attempts,
         due_at, lease_id, held_since, last_attempt_at, created_at, updated_at)
       SELECT 'dlv_' || $5 || lpad(i::text, 6, '0'), $2, $3, 'evt_' || $5 || lpad(i::text, 6, '0'), 'run.completed',
         'failed', 1, NULL, NULL, NULL, $4::timestamptz + i * interval '1 ms',
         $4::timestamptz + i * interval '1 ms', $4::timestamptz + i * interval '1 ms'
       FROM generate_series(0, $1 - 1) AS i`,
      [count, TENANT, webhookId, t, label],
    );
    await admin.query('ANALYZE keyhook_deliveries');
    return new Date(t.getTime() - 1_000).toISOString();
  }
  const endpoint = async (path, deliveryRate) =>
    (await keyhook.webhooks.create(TENANT, { url: url(path), events: ['run.completed'], deliveryRate }))
      .webhook.id;
  const recover = (webhookId, since) => keyhook.deliveries.recover(TENANT, webhookId, { since });
  async function arrived(path, count, timeoutMs) {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const times = await arrivals(path);
      if (times.length >= count) return times;
      if (Date.now() > until)
        throw new Error(`${path}: ${times.length} of ${count} arrived in ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  function paced(times) {
    const sorted = [...times].sort((a, b) => a - b);
    const spanS = (sorted.at(-1) - sorted[0]) / 1000;
    const perSecond = new Map();
    for (const t of sorted) {
      const second = Math.floor((t - sorted[0]) / 1000);
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
    }
    // Whole seconds only: the last one is cut short.
    const counts = [...perSecond.entries()].filter(([s]) => s < Math.floor(spanS)).map(([, n]) => n);
    let busiest = 0;
    for (let start = 0, end = 0; start < sorted.length; start++) {
      while (end < sorted.length && sorted[end] < sorted[start] + 1000) end++;
      busiest = Math.max(busiest, end - start);
    }
    return {
      rate: (sorted.length - 1) / spanS,
      spanS,
      median: median(counts),
      max: Math.max(...counts),
      busiest,
    };
  }
  const verdicts = [];

  try {
    const worker = keyhook.createWorker({ concurrency: 16 });
    workers.push(worker);
    worker.start();

    // 1. A recovered backlog to a limited endpoint.
    const limited = await endpoint('/limited', { perSecond: PER_SECOND });
    const since = await failed(limited, DELIVERIES);
    console.log(
      `1. ${DELIVERIES} failed deliveries recovered to an endpoint limited to ${PER_SECOND}/s (about ${Math.round(DELIVERIES / PER_SECOND)} s)`,
    );
    await recover(limited, since);
    const one = paced(await arrived('/limited', DELIVERIES, (DELIVERIES / PER_SECOND) * 1500 + 30_000));
    const oneVerdict = Math.abs(one.rate / PER_SECOND - 1) <= 0.1 ? 'met' : 'NOT met';
    verdicts.push({ part: 'recovered backlog', ...one, verdict: oneVerdict });
    console.log(
      `   arrival rate ${one.rate.toFixed(2)}/s over ${one.spanS.toFixed(1)} s; per second median ${one.median}, max ${one.max}; ` +
        `busiest 1 s window ${one.busiest}; target ${PER_SECOND}/s ± 10 %: ${oneVerdict}\n`,
    );

    // 2. An unlimited endpoint beside a limited one's backlog, against it alone, in paired rounds.
    const free = await endpoint('/free', null);
    const busy = await endpoint('/busy', { perSecond: PER_SECOND });
    let freeSeen = 0;
    async function freeThroughput(beside) {
      const freeSince = await failed(free, FREE);
      if (beside) await recover(busy, await failed(busy, BESIDE));
      const started = Date.now();
      await recover(free, freeSince);
      const times = await arrived('/free', freeSeen + FREE, 120_000);
      freeSeen += FREE;
      const last = Math.max(...times.slice(-FREE));
      if (beside) {
        // What the limited endpoint still has waiting goes back to failed, its pace afresh.
        await admin.query(
          `UPDATE keyhook_deliveries SET status = 'failed', due_at = NULL
           WHERE webhook_id = $1 AND status IN ('pending', 'retry_scheduled')`,
          [busy],
        );
        await admin.query(
          'UPDATE keyhook_endpoint_rates SET next_at = NULL, queue_at = NULL WHERE webhook_id = $1',
          [busy],
        );
      }
      return FREE / ((last - started) / 1000);
    }
    console.log(
      `2. ${FREE} deliveries to an unlimited endpoint, beside ${BESIDE} waiting for a ${PER_SECOND}/s endpoint / alone, ${ROUNDS} rounds`,
    );
    const ratios = [];
    for (let round = 0; round < ROUNDS; round++) {
      const first = round % 2 === 0;
      const a = await freeThroughput(first);
      const b = await freeThroughput(!first);
      const [beside, alone] = first ? [a, b] : [b, a];
      ratios.push(beside / alone);
      console.log(
        `   round ${round + 1}: beside ${beside.toFixed(0)}/s, alone ${alone.toFixed(0)}/s, ratio ${(beside / alone).toFixed(3)}`,
      );
    }
    const ratio = median(ratios);
    const twoVerdict = ratio >= 0.9 ? 'met' : Math.max(...ratios) >= 0.9 ? 'within noise' : 'NOT met';
    verdicts.push({
      part: 'unlimited beside limited',
      ratio,
      min: Math.min(...ratios),
      max: Math.max(...ratios),
      verdict: twoVerdict,
    });
    console.log(
      `   beside / alone: ${ratio.toFixed(3)} (${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}), target ≥ 0.9: ${twoVerdict}\n`,
    );

    // 3. Two instances on one schema.
    const other = await open();
    stores.push(other);
    const second = keyhookOn(other);
    keyhooks.push(second);
    const secondWorker = second.createWorker({ concurrency: 16 });
    workers.push(secondWorker);
    secondWorker.start();
    const shared = await endpoint('/shared', { perSecond: PER_SECOND });
    console.log(
      `3. ${TWO} deliveries recovered to an endpoint limited to ${PER_SECOND}/s, two instances each with a worker`,
    );
    await recover(shared, await failed(shared, TWO));
    const three = paced(await arrived('/shared', TWO, (TWO / PER_SECOND) * 1500 + 30_000));
    const threeVerdict = three.busiest <= PER_SECOND + 1 ? 'met' : 'NOT met';
    verdicts.push({ part: 'two instances', ...three, verdict: threeVerdict });
    console.log(
      `   busiest 1 s window ${three.busiest}, target ≤ ${PER_SECOND + 1}: ${threeVerdict}; overall ${three.rate.toFixed(2)}/s ` +
        `over ${three.spanS.toFixed(1)} s (per second median ${three.median}, max ${three.max})\n`,
    );
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
    for (const k of keyhooks) await k.close();
    for (const s of stores) await s.close();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
    receiver.close();
  }
  console.log(`json ${JSON.stringify(verdicts)}`);
}
