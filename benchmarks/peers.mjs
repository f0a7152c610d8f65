// Shared by the delivery benchmarks (delivery.mjs, publish-matrix.mjs): the ~1 KB event, the
// receiver in its own process, the database counters, keyhook's setup, the bare sender's body and
// POST, and the graphile-worker peer. Importing it registers the SIGINT cleanup.
import { fork } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep, setImmediate as yieldToLoop } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createKeyhook } from '@keyhook/core';

export const numberFrom = (name, fallback) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  return value;
};
export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** A run that records no success for this long is stuck: it is reported, not waited on forever. */
export const STALL_MS = 30_000;
export const PUBLISH_YIELD_EVERY = 16;

export const TENANT = 'bench';
export const EVENT_TYPE = 'run.completed';
export const ENCRYPTION_KEY = Buffer.alloc(32, 7).toString('base64');
export const ADMIN_SECRET = 'benchmark-admin-secret-0123456789abcdef';
export const BARE_SECRET = `whsec_${'3f9a1c5e7b2d4f60'.repeat(4)}`;
export const USER_AGENT = 'keyhook-webhooks/1 (+https://github.com/keyhook/keyhook)';
export const now = () => performance.timeOrigin + performance.now();
// ---------------------------------------------------------------------------------------------
// The event: keyhook's body is {id, type, createdAt, data}; `pages` pads it to about 1 KB.

const PAGES = [];
{
  const probe = () =>
    JSON.stringify({
      id: `evt_${'0'.repeat(26)}`, // newId('evt'): 26 characters after the prefix
      type: EVENT_TYPE,
      createdAt: new Date().toISOString(),
      data: eventData(99_999, now()),
    }).length;
  while (probe() < 1024 - 40) {
    PAGES.push({ url: `https://docs.example.com/guide/${PAGES.length}`, status: 'added' });
  }
}

export function eventData(seq, sentAt) {
  return {
    runId: `run_${seq}`,
    seq,
    sentAt,
    sourceId: 'src_docs',
    counts: { added: PAGES.length, changed: 0 },
    pages: PAGES,
  };
}
// ---------------------------------------------------------------------------------------------
// Housekeeping: temp dirs and schemas are removed even on an error or Ctrl-C.

export const cleanups = new Set();
export async function runCleanups() {
  for (const cleanup of [...cleanups].reverse()) {
    cleanups.delete(cleanup);
    await Promise.resolve()
      .then(cleanup)
      .catch((error) => console.error(`cleanup failed: ${error?.message ?? error}`));
  }
}
process.once('SIGINT', async () => {
  await runCleanups();
  process.exit(130);
});

export function tempDir() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'keyhook-delivery-bench-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  cleanups.add(remove);
  return {
    dir,
    remove: () => {
      cleanups.delete(remove);
      remove();
    },
  };
}

/** Silent, but counts what keyhook would have warned about: any warning makes a run suspect. */
export function countingLogger() {
  const logger = {
    warnings: [],
    info: () => {},
    warn: (_context, message) => logger.warnings.push(message),
    error: (_context, message) => logger.warnings.push(message),
  };
  return logger;
}
// ---------------------------------------------------------------------------------------------
// The receiver, in its own process.

export async function startReceiver() {
  const script = fileURLToPath(new URL('./delivery-receiver.mjs', import.meta.url));
  const child = fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pending = [];
  child.on('message', (message) => pending.shift()?.(message));
  const next = () => new Promise((resolve) => pending.push(resolve));
  const ready = next();
  let closing = false;
  child.once('exit', (code) => {
    if (closing) return;
    console.error(`ERROR: the receiver exited with ${code}`);
    runCleanups().finally(() => process.exit(0));
  });
  const { port, pid } = await ready;
  const ask = (message) => {
    const answer = next();
    child.send(message);
    return answer;
  };
  return {
    pid,
    url: `http://127.0.0.1:${port}/hook`,
    port,
    ask,
    reset: (secret, latency = false) => ask({ type: 'reset', secret, latency }),
    stats: () => ask({ type: 'stats' }),
    async cpuMicros() {
      const { usage } = await ask({ type: 'cpu' });
      return usage.user + usage.system;
    },
    /** The receiver's clock minus this one's, from the IPC ping with the shortest round trip. */
    async clockOffset() {
      let best = { rttMs: Number.POSITIVE_INFINITY, offsetMs: 0 };
      for (let i = 0; i < 50; i++) {
        const t0 = now();
        const { now: theirs } = await ask({ type: 'clock' });
        const t1 = now();
        if (t1 - t0 < best.rttMs) best = { rttMs: t1 - t0, offsetMs: theirs - (t0 + t1) / 2 };
      }
      return best;
    },
    close() {
      closing = true;
      child.disconnect();
    },
  };
}
// ---------------------------------------------------------------------------------------------
// Counting recorded successes: the store's completeAttempt, wrapped.

export class Tally {
  succeeded = 0;
  other = 0;
  onSuccess = undefined;
  /** Callers of reached(), each with its count: the soak's publisher and its marks wait at once. */
  waiters = new Set();

  watch(store) {
    const complete = store.completeAttempt.bind(store);
    store.completeAttempt = async (completion) => {
      const outcome = await complete(completion);
      if (outcome.outcome === 'recorded' && completion.status === 'succeeded') {
        this.succeeded++;
        this.onSuccess?.(completion.deliveryId);
      } else {
        this.other++;
      }
      for (const waiter of this.waiters) if (this.succeeded >= waiter.n) waiter.resolve();
      return outcome;
    };
  }

  /** Resolves once `n` successes are recorded; rejects when none is recorded for STALL_MS. */
  reached(n) {
    if (this.succeeded >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      let last = this.succeeded;
      let lastMoved = performance.now();
      const timer = setInterval(() => {
        if (this.succeeded !== last) {
          last = this.succeeded;
          lastMoved = performance.now();
        } else if (performance.now() - lastMoved > STALL_MS) {
          clearInterval(timer);
          this.waiters.delete(waiter);
          reject(
            new Error(`stalled at ${this.succeeded}/${n} recorded successes (${this.other} other outcomes)`),
          );
        }
      }, 1000);
      const waiter = {
        n,
        resolve: () => {
          clearInterval(timer);
          this.waiters.delete(waiter);
          resolve();
        },
      };
      this.waiters.add(waiter);
    });
  }
}

export async function countSucceeded(store, webhookId) {
  let count = 0;
  let before;
  for (;;) {
    const page = await store.listDeliveries(TENANT, webhookId, { limit: 1000, before, status: 'succeeded' });
    count += page.length;
    if (page.length < 1000) return count;
    before = page.at(-1).id;
  }
}
export function makeKeyhook(store, logger, delivery = {}, telemetry = undefined) {
  return createKeyhook({
    eventCatalog: { [EVENT_TYPE]: {} },
    store,
    adminSession: { secret: ADMIN_SECRET },
    mode: 'development',
    encryptionKey: ENCRYPTION_KEY,
    logger,
    delivery: { timeoutMs: 10_000, ...delivery },
    telemetry,
  });
}
let pgModules;
export async function loadPg() {
  if (!pgModules) {
    const store = await import('@keyhook/store-postgres');
    pgModules = {
      pg: (await import('pg')).default,
      createPostgresStore: store.createPostgresStore,
      checkOut: store.checkOut,
      withTransaction: store.withTransaction,
    };
  }
  return pgModules;
}

export async function dropSchema(schema) {
  const { pg } = await loadPg();
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

export async function postgresReachable() {
  try {
    const { pg } = await loadPg();
    const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 });
    await client.connect();
    await client.end();
    return null;
  } catch (error) {
    return error?.message ?? String(error);
  }
}

/**
 * The CPU the Postgres server has used, in µs: its postmaster's own and reaped children's time,
 * plus every live child's (the backends serving the run). Read from /proc, so only for a server
 * on this machine that this user can see; null otherwise. Ticks are Linux's USER_HZ of 100.
 */
let postgresCpuReader;
export async function postgresCpu() {
  if (postgresCpuReader === undefined) {
    postgresCpuReader = null;
    try {
      const { pg } = await loadPg();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      const fields = (pid) => {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      };
      let postmaster;
      try {
        const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
        // Fields after the command: state (0), ppid (1), … utime (11), stime (12), cutime (13), cstime (14).
        postmaster = Number(fields(rows[0].pid)[1]);
      } finally {
        await client.end();
      }
      if (!(postmaster > 1)) throw new Error('no postmaster');
      postgresCpuReader = () => {
        let ticks = 0;
        for (const entry of readdirSync('/proc')) {
          if (!/^\d+$/.test(entry)) continue;
          let f;
          try {
            f = fields(entry);
          } catch {
            continue; // gone meanwhile
          }
          const pid = Number(entry);
          if (pid === postmaster) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
          else if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
        }
        return ticks * 10_000;
      };
    } catch {
      postgresCpuReader = null;
    }
  }
  return postgresCpuReader?.() ?? null;
}

/**
 * What the database did for a run, per delivery: round trips (queries this process sent through
 * pg: pg does not pipeline, so each is one round trip), transactions (each statement sent outside
 * BEGIN … COMMIT is one, and each COMMIT or ROLLBACK ends one) and the server's CPU
 * (postgresCpu). `reading()` before, `since(before, n)` after.
 */
const sent = { queries: 0, transactions: 0, kinds: {} };

/**
 * A statement's kind, and whether it opens or closes a transaction, worked out once per text: the
 * store sends a few texts of kilobytes each, and matching them on every query would put the
 * harness's own CPU into keyhook's figure.
 */
const kinds = new Map();
function statementKind(text) {
  let known = kinds.get(text);
  if (known === undefined) {
    known = {
      kind: /INSERT INTO \S+keyhook_events/.test(text)
        ? text.includes("status = 'succeeded'")
          ? 'publish + success'
          : 'publish'
        : text.includes('SKIP LOCKED') && text.includes('leased AS')
          ? 'lease'
          : text.includes("status = 'succeeded'")
            ? 'success'
            : text.slice(0, 24).replace(/\s+/g, ' '),
      opens: /^\s*BEGIN\b/i.test(text),
      closes: /^\s*(COMMIT|ROLLBACK)\s*$/i.test(text),
    };
    // Bounded: a statement with its values in its text would otherwise grow the map.
    if (kinds.size < 1_000) kinds.set(text, known);
  }
  return known;
}
export const postgresUse = {
  async reading() {
    const { pg } = await loadPg();
    if (!pg.Client.prototype.query.counted) {
      const query = pg.Client.prototype.query;
      pg.Client.prototype.query = function countedQuery(config, ...rest) {
        const text = typeof config === 'string' ? config : (config?.text ?? '');
        sent.queries++;
        const { kind, opens, closes } = statementKind(text);
        sent.kinds[kind] = (sent.kinds[kind] ?? 0) + 1;
        if (opens) this.inTransaction = true;
        else if (closes) {
          sent.transactions++;
          this.inTransaction = false;
        } else if (!this.inTransaction) sent.transactions++;
        return query.call(this, config, ...rest);
      };
      pg.Client.prototype.query.counted = true;
    }
    const cpu = await postgresCpu();
    return { ...sent, kinds: { ...sent.kinds }, cpu };
  },
  async since(before, n) {
    const after = await this.reading();
    return {
      roundTrips: (after.queries - before.queries) / n,
      // Kinds this run sent at least once per 200 deliveries (setup and teardown fall below).
      byKind: Object.fromEntries(
        Object.entries(after.kinds)
          .map(([kind, count]) => [kind, (count - (before.kinds[kind] ?? 0)) / n])
          .filter(([, perDelivery]) => perDelivery >= 0.005),
      ),
      transactions: (after.transactions - before.transactions) / n,
      cpuMicros: after.cpu === null || before.cpu === null ? null : (after.cpu - before.cpu) / n,
    };
  },
};
/**
 * One keyhook on a SQLite file in a temporary directory, with one webhook to the receiver; a
 * worker of `concurrency`, `lanes` publishers. `telemetry` (telemetry.mjs) is shut down with it.
 */
export async function openSqliteInstance(receiver, delivery, { concurrency, lanes, telemetry }) {
  const { createSqliteStore } = await import('@keyhook/store-sqlite');
  const temp = tempDir();
  const filename = path.join(temp.dir, 'keyhook.db');
  const logger = countingLogger();
  const store = createSqliteStore({ filename, logger });
  const keyhook = makeKeyhook(store, logger, delivery, telemetry?.options);
  const { webhook, secret } = await keyhook.webhooks.create(TENANT, {
    url: receiver.url,
    events: [EVENT_TYPE],
  });
  return {
    stores: [store],
    keyhooks: [keyhook],
    logger,
    webhookId: webhook.id,
    secret,
    workerOptions: { concurrency },
    publishLanes: lanes,
    telemetry,
    /** The file and its WAL, in bytes. */
    async size() {
      const bytes = (file) => (existsSync(file) ? statSync(file).size : 0);
      return bytes(filename) + bytes(`${filename}-wal`);
    },
    async close() {
      await keyhook.close();
      await store.close();
      await telemetry?.shutdown();
      temp.remove();
    },
  };
}

/**
 * `instances` keyhook instances, each on its own PostgresStore (its own pool) over one fresh
 * schema `bench_<random>`, dropped by close(); a worker of `concurrency` each, `lanes` publishers.
 */
export async function openPostgresInstances(receiver, delivery, { instances, concurrency, lanes }) {
  const { createPostgresStore } = await loadPg();
  const schema = `bench_${randomBytes(6).toString('hex')}`;
  const drop = () => dropSchema(schema);
  cleanups.add(drop);
  const logger = countingLogger();
  const stores = [];
  // One after the other: the second finds the schema migrated.
  for (let i = 0; i < instances; i++) {
    stores.push(await createPostgresStore({ connectionString: PG_URL, schema, logger }));
  }
  const keyhooks = stores.map((store) => makeKeyhook(store, logger, delivery));
  const { webhook, secret } = await keyhooks[0].webhooks.create(TENANT, {
    url: receiver.url,
    events: [EVENT_TYPE],
  });
  return {
    stores,
    keyhooks,
    logger,
    webhookId: webhook.id,
    secret,
    workerOptions: { concurrency },
    publishLanes: lanes,
    database: postgresUse,
    /** keyhook's tables with their indexes and TOAST, in bytes. */
    async size() {
      const { pg } = await loadPg();
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      try {
        const result = await client.query(
          `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class AS c
            JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
          [schema],
        );
        return Number(result.rows[0].bytes);
      } finally {
        await client.end();
      }
    },
    async close() {
      await Promise.all(keyhooks.map((keyhook) => keyhook.close()));
      await Promise.all(stores.map((store) => store.close()));
      cleanups.delete(drop);
      await drop();
    },
  };
}

/** One run's figures: its time, rate, and this process's and the receiver's CPU per delivery. */
export function runFigures(n, ms, cpu, receiverCpu, extra) {
  return {
    ms,
    perSecond: (n / ms) * 1000,
    cpuMicrosPerDelivery: (cpu.user + cpu.system) / n,
    receiverCpuMicrosPerDelivery: receiverCpu / n,
    ...extra,
  };
}
/** POSTs one signed event body to the receiver through `agent`; resolves with the status. */
export function postSigned(agent, port, eventId, body, signature) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path: '/hook',
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': USER_AGENT,
        'keyhook-event-id': eventId,
        'keyhook-signature': signature,
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      res.on('data', () => {});
      res.on('end', () => resolve(res.statusCode));
      res.on('error', reject);
    });
    req.end(body);
  });
}

/** The signature header a sender without keyhook puts on `body`: one HMAC over `t.` and the bytes. */
export function signBody(body) {
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', BARE_SECRET).update(`${t}.`).update(body).digest('hex');
  return `t=${t},v1=${v1}`;
}

/** The body and signature header a sender without keyhook builds: stringify, then one HMAC. */
export function signedBody(id, createdAt, data) {
  const body = Buffer.from(JSON.stringify({ id, type: EVENT_TYPE, createdAt, data }));
  return { body, signature: signBody(body) };
}

/**
 * The peer: a webhook sender built on graphile-worker as one would build it in an afternoon. One
 * job per event (addJob from `lanes` publisher lanes, alternating between one WorkerUtils per
 * runner as publishes alternate between keyhook's instances), and a task that builds the body,
 * signs it and POSTs it to the same receiver, throwing on a non-2xx so graphile-worker retries.
 * `workers` runners of `concurrency` each on one fresh schema, graphile-worker's defaults otherwise
 * (prepared statements and LISTEN/NOTIFY included). The clock stops when N tasks have succeeded
 * and graphile-worker's job table is empty (every completion recorded). `prewarm` jobs, when
 * given, run the same way before the clock.
 */
export async function graphileRun(receiver, n, tag, { workers, concurrency, lanes, prewarm = 0 }) {
  const { run, makeWorkerUtils, Logger } = await import('graphile-worker');
  const schema = `gw_bench_${randomBytes(6).toString('hex')}`;
  const drop = () => dropSchema(schema);
  cleanups.add(drop);
  const logger = new Logger(() => () => {});
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const warnings = [];
  let succeeded = 0;
  const taskList = {
    deliver: async ({ id, createdAt, data }) => {
      const { body, signature } = signedBody(id, createdAt, data);
      const status = await postSigned(agent, receiver.port, id, body, signature);
      if (status < 200 || status >= 300) throw new Error(`HTTP ${status}`);
      succeeded++;
    },
  };
  const options = { connectionString: PG_URL, schema, logger, noHandleSignals: true };
  const runners = [];
  const utils = [];
  try {
    // One after the other: the first installs graphile-worker's schema.
    for (let i = 0; i < workers; i++) {
      utils.push(await makeWorkerUtils(options));
      await utils[i].migrate();
    }
    await receiver.reset(BARE_SECRET);
    // Started before the clock, as keyhook's workers are created before it: idle until the jobs come.
    for (let i = 0; i < workers; i++) {
      const runner = await run({ ...options, concurrency, taskList });
      runner.events.on('job:error', ({ error }) => warnings.push(String(error?.message ?? error)));
      runners.push(runner);
    }
    const { pg } = await loadPg();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    const jobsLeft = async () =>
      Number((await client.query(`SELECT count(*) AS n FROM "${schema}"._private_jobs`)).rows[0].n);
    /** Adds `count` jobs from `lanes` lanes; resolves when every one has run and been removed. */
    const deliverAll = async (count, prefix) => {
      const started = performance.now();
      const target = succeeded + count;
      let next = 0;
      let publishMs;
      const lane = async () => {
        let since = 0;
        while (next < count) {
          const seq = next++;
          const id = `evt_${prefix}${String(seq).padStart(26 - prefix.length, '0')}`;
          await utils[seq % utils.length].addJob('deliver', {
            id,
            createdAt: new Date().toISOString(),
            data: eventData(seq, now()),
          });
          if (++since === PUBLISH_YIELD_EVERY) {
            since = 0;
            await yieldToLoop();
          }
        }
      };
      const publish = Promise.all(Array.from({ length: lanes }, lane)).then(() => {
        publishMs = performance.now() - started;
      });
      let lastMoved = performance.now();
      let last = succeeded;
      for (;;) {
        await sleep(5);
        if (succeeded !== last) {
          last = succeeded;
          lastMoved = performance.now();
        } else if (performance.now() - lastMoved > STALL_MS) {
          throw new Error(`graphile-worker stalled at ${succeeded}/${target}`);
        }
        if (succeeded >= target && publishMs !== undefined && (await jobsLeft()) === 0) break;
      }
      await publish;
      return publishMs;
    };
    let publishMs;
    let database;
    let cpuBefore;
    let receiverCpuBefore;
    let started;
    try {
      // Before the clock, when asked: the pools' connections and prepared statements made.
      if (prewarm > 0) {
        await deliverAll(prewarm, `${tag}P`);
        succeeded = 0;
        await receiver.reset(BARE_SECRET);
      }
      database = await postgresUse.reading();
      cpuBefore = process.cpuUsage();
      receiverCpuBefore = await receiver.cpuMicros();
      started = performance.now();
      publishMs = await deliverAll(n, tag);
    } finally {
      await client.end();
    }
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const receiverCpu = (await receiver.cpuMicros()) - receiverCpuBefore;
    const databaseUse = await postgresUse.since(database, n);
    const received = await receiver.stats();
    const problems = [];
    if (received.distinct !== n) problems.push(`${received.distinct} distinct events received`);
    if (received.hits !== received.distinct) problems.push(`${received.hits - received.distinct} duplicates`);
    if (received.badSignatures) problems.push(`${received.badSignatures} bad signatures`);
    if (warnings.length) problems.push(`job errors: ${warnings.slice(0, 3).join('; ')}`);
    return runFigures(n, ms, cpu, receiverCpu, { publishMs, database: databaseUse, problems });
  } finally {
    await Promise.all(runners.map((runner) => runner.stop()));
    await Promise.all(utils.map((u) => u.release()));
    agent.destroy();
    cleanups.delete(drop);
    await drop();
  }
}
export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
/** Nearest-rank percentile. */
export const percentile = (sorted, p) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
export const fixed = (value, digits = 0) => value.toFixed(digits).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
