// Where the Node CPU of one delivery goes: node benchmarks/delivery-profile.mjs
//
// For each store (Postgres, one instance; SQLite), the worker first delivers BENCH_PREWARM events
// unprofiled, so that V8 has optimised its code (BENCHMARKS.md, "How a figure is read"), and stops.
// Then BENCH_DELIVERIES events are published, unprofiled, and the same worker, started again,
// delivers them to the benchmark receiver (its own process) under the inspector's CPU profiler,
// which samples this process's main thread. Each sample is put in the first of these parts found
// on its stack, leaf to root, by the order below:
//   signing           the signature headers and the HMAC (or Ed25519), and opening the secret;
//   row decoding      the driver parsing replies into rows, and the store mapping rows to records;
//   statements out    the driver encoding and sending the store's statements (Postgres: a pooled
//                     client's query runs after an await, so its stack no longer says which
//                     operation sent it);
//   completion write  recording the attempt's outcome (Store.completeAttempt);
//   lease             claiming due deliveries (Store.leaseDeliveries) and the worker's lease loop;
//   commits           SQLite: the COMMIT of a group of leases and completions (group-commit.ts);
//   the request       the POST: the sender, undici, and the socket's writes and reads;
//   garbage collector V8's collector on the main thread;
//   the rest          everything else (the worker's bookkeeping, timers, promises).
// A part's figure is µs of main-thread CPU per delivery. The process's whole CPU per delivery
// (process.cpuUsage: every thread, the kernel's part included) is printed beside it.
//
// Under each part, the functions its samples ended in (BENCH_PROFILE_TOP of them, 3).
//
// Environment: BENCH_DELIVERIES (5,000), BENCH_PREWARM (5,000, or off), BENCH_STORES
// (postgres,sqlite), BENCH_PG_URL, and BENCH_PG_CONCURRENCY (8) / BENCH_CONCURRENCY (16), the
// workers' concurrency per store.
import { Session } from 'node:inspector/promises';
import {
  EVENT_TYPE,
  eventData,
  fixed,
  loadPg,
  now,
  numberFrom,
  openPostgresInstances,
  openSqliteInstance,
  postgresReachable,
  runCleanups,
  startReceiver,
  Tally,
  TENANT,
} from './peers.mjs';

const N = numberFrom('BENCH_DELIVERIES', 5_000);
const PREWARM = process.env.BENCH_PREWARM === 'off' ? 0 : numberFrom('BENCH_PREWARM', 5_000);
const STORES = (process.env.BENCH_STORES ?? 'postgres,sqlite').split(',');
// How many of each part's functions to name.
const TOP = numberFrom('BENCH_PROFILE_TOP', 3);

const PARTS = [
  [
    'signing',
    (f) =>
      /^(signedHeaders|signatureHeader|standardWebhooksHeaders|secretsOf|signingSecret\w*|openSecret\w*)$/.test(
        f.functionName,
      ) || /node:internal\/crypto\/(hash|mac|sig|keys|cipher)/.test(f.url),
  ],
  [
    'row decoding',
    (f) =>
      /pg-protocol\/dist\/(parser|buffer-reader)|pg-types|postgres-date|postgres-array|postgres-interval|pg\/lib\/result/.test(
        f.url,
      ) ||
      /^(leasedRows|toEventRecord|toDeliveryRecord|toWebhookRecord|joinedEvent|unprefixed|readIsoTimestamptz)$/.test(
        f.functionName,
      ),
  ],
  [
    'statements out',
    (f) => /pg-protocol\/dist\/serializer|pg\/lib\/(client|query|utils|connection)|pg-pool/.test(f.url),
  ],
  ['completion write', (f) => /^(completeAttempt|completeAttempts|successInput)$/.test(f.functionName)],
  ['lease', (f) => /^(leaseDeliveries|lease)$/.test(f.functionName)],
  ['commits', (f) => /(^|\.)commitGroup$/.test(f.functionName)],
  [
    'the request',
    (f) =>
      /undici|node:_http_|node:net|stream_base_commons|node:internal\/streams/.test(f.url) ||
      f.url.startsWith('wasm') ||
      (f.functionName === 'send' && !/pg/.test(f.url)),
  ],
];

/** A function as the tables name it; a native one (no file) with the function that called it. */
function frameName({ functionName, url, lineNumber }, caller) {
  const name = `${functionName || '(anonymous)'}${url ? ` ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}` : ''}`;
  return url || caller === undefined || caller.functionName.startsWith('(')
    ? name
    : `${name} ← ${frameName(caller)}`;
}

function partsOf(profile, deliveries) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const partOfNode = new Map();
  const partOf = (id) => {
    let part = partOfNode.get(id);
    if (part !== undefined) return part;
    const leaf = byId.get(id).callFrame.functionName;
    if (leaf === '(garbage collector)') part = 'garbage collector';
    else if (leaf === '(idle)') part = null;
    else {
      let best = PARTS.length;
      for (let at = id; at !== undefined; at = parent.get(at)) {
        const frame = byId.get(at).callFrame;
        const found = PARTS.findIndex(([, matches]) => matches(frame));
        if (found !== -1 && found < best) best = found;
      }
      part = best < PARTS.length ? PARTS[best][0] : 'the rest';
    }
    partOfNode.set(id, part);
    return part;
  };
  const micros = new Map([...PARTS.map(([name]) => [name, 0]), ['garbage collector', 0], ['the rest', 0]]);
  // Per part, the functions its samples ended in (self time), to say what a part is made of.
  const leaves = new Map([...micros.keys()].map((name) => [name, new Map()]));
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    const part = partOf(id);
    if (part === null) continue;
    // A sample's time is the delta that follows it.
    const us = profile.timeDeltas[i + 1] ?? 0;
    micros.set(part, micros.get(part) + us);
    const leaf = frameName(byId.get(id).callFrame, byId.get(parent.get(id))?.callFrame);
    leaves.get(part).set(leaf, (leaves.get(part).get(leaf) ?? 0) + us);
  }
  return [...micros].map(([name, us]) => ({
    name,
    perDelivery: us / deliveries,
    top: [...leaves.get(name)]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([leaf, leafUs]) => ({ leaf, perDelivery: leafUs / deliveries })),
  }));
}

const openSqlite = (receiver) =>
  openSqliteInstance(receiver, {}, { concurrency: numberFrom('BENCH_CONCURRENCY', 16), lanes: 1 });

const openPostgres = (receiver) =>
  openPostgresInstances(
    receiver,
    {},
    { instances: 1, concurrency: numberFrom('BENCH_PG_CONCURRENCY', 8), lanes: 1 },
  );

/** Counts the statements a pg client sends while `counting` is on (the store's own pg). */
const statements = { counting: false, sent: 0 };
async function countStatements() {
  const { pg } = await loadPg();
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function countedQuery(...args) {
    if (statements.counting) statements.sent++;
    return query.apply(this, args);
  };
}

async function profiled(open, receiver) {
  const backend = await open(receiver);
  const session = new Session();
  session.connect();
  try {
    const [keyhook] = backend.keyhooks;
    const publish = async (first, count) => {
      for (let seq = first; seq < first + count; seq++) {
        await keyhook.events.publish({ tenantId: TENANT, type: EVENT_TYPE, data: eventData(seq, now()) });
      }
    };
    const tally = new Tally();
    tally.watch(backend.stores[0]);
    const worker = keyhook.createWorker(backend.workerOptions);
    if (PREWARM > 0) {
      worker.start();
      await publish(0, PREWARM);
      await tally.reached(PREWARM);
      await worker.stop();
    }
    await publish(PREWARM, N);
    await receiver.reset(backend.secret);
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    Object.assign(statements, { counting: true, sent: 0 });
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    worker.start();
    await tally.reached(PREWARM + N);
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const { profile } = await session.post('Profiler.stop');
    statements.counting = false;
    await worker.stop();
    const received = await receiver.stats();
    if (received.distinct !== N || backend.logger.warnings.length > 0 || tally.other > 0) {
      throw new Error(
        `${received.distinct}/${N} received, ${tally.other} not succeeded, warnings: ${backend.logger.warnings.slice(0, 3).join('; ')}`,
      );
    }
    return {
      parts: partsOf(profile, N),
      cpuPerDelivery: (cpu.user + cpu.system) / N,
      rate: N / (ms / 1000),
      statementsPerDelivery: statements.sent / N,
    };
  } finally {
    session.disconnect();
    await backend.close();
  }
}

if (STORES.includes('postgres')) await countStatements();
const receiver = await startReceiver();
try {
  console.log(
    `keyhook delivery profile: Node ${process.version}, ${N} deliveries per store, CPU sampled every 100 µs\n`,
  );
  for (const kind of STORES) {
    const unreachable = kind === 'postgres' ? await postgresReachable() : null;
    if (unreachable !== null) {
      console.log(`postgres: skipped, ${unreachable}\n`);
      continue;
    }
    const result = await profiled(kind === 'postgres' ? openPostgres : openSqlite, receiver);
    const sampled = result.parts.reduce((sum, part) => sum + part.perDelivery, 0);
    console.log(
      `${kind}: ${fixed(result.rate)} deliveries/s; process CPU ${result.cpuPerDelivery.toFixed(1)} µs per delivery, ` +
        `main thread sampled ${sampled.toFixed(1)} µs` +
        (kind === 'postgres' ? `; ${result.statementsPerDelivery.toFixed(2)} statements per delivery` : ''),
    );
    console.log('part                µs per delivery   share of sampled');
    for (const part of result.parts) {
      console.log(
        `${part.name.padEnd(18)}  ${part.perDelivery.toFixed(1).padStart(15)}   ${((100 * part.perDelivery) / sampled).toFixed(1).padStart(14)} %`,
      );
      for (const { leaf, perDelivery } of part.top)
        console.log(`    ${perDelivery.toFixed(1).padStart(7)}  ${leaf}`);
    }
    console.log(`json ${JSON.stringify({ store: kind, ...result })}\n`);
  }
} finally {
  receiver.close();
  await runCleanups();
}
