// What the Postgres store's delivery path costs its process in instructions, counted by valgrind,
// where a change of a few percent drowns in a shared machine's drift:
//
//   node benchmarks/store-instructions.mjs
//
// A child process, under `valgrind --tool=callgrind --separate-threads=yes`, opens a store on a
// fresh schema with one endpoint and drives it as a busy worker does, without the worker, the
// HTTP or the clock, so that every run batches alike: rounds of 4 publishes, each leasing its one
// delivery (the handoff), sent in one tick with the 4 successes of the round before, so each
// round is one publishAndSucceed (src/operations/publish-event.ts in @keyhook/store-postgres).
// It runs STORE_WARMUP (1,500) deliveries, then N. Two children, N = STORE_SMALL (1,000) and
// STORE_LARGE (3,000), and the difference of their main threads' counts divided by the difference
// of N is the figure: start-up, warm-up and the JIT's first compiles cancel out. Printed beside it:
// every thread's (V8's helpers included, whose share under valgrind follows its slowness more
// than the code). The payloads are the delivery benchmark's (~1 KB).
// Other knobs: STORE_KEEP, a directory to keep the callgrind files in (for callgrind_annotate).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

if (process.argv[2] === '--child') await child(Number(process.argv[3]));
else parent();

function parent() {
  const small = Number(process.env.STORE_SMALL ?? 1_000);
  const large = Number(process.env.STORE_LARGE ?? 3_000);
  const outDir = process.env.STORE_KEEP ?? mkdtempSync(path.join(tmpdir(), 'keyhook-callgrind-'));
  const counts = {};
  for (const n of [small, large]) {
    const run = spawnSync(
      'valgrind',
      [
        '--tool=callgrind',
        '--separate-threads=yes',
        `--callgrind-out-file=${path.join(outDir, `n${n}`)}`,
        '--quiet',
        process.execPath,
        fileURLToPath(import.meta.url),
        '--child',
        String(n),
      ],
      { stdio: ['ignore', 'inherit', 'inherit'] },
    );
    if (run.status !== 0) throw new Error(`the child for N = ${n} exited with ${run.status ?? run.signal}`);
    // callgrind writes one file per thread, `n<N>-<thread>`; the main thread is 01.
    const threads = readdirSync(outDir).filter((file) => file.startsWith(`n${n}-`));
    const total = (file) =>
      Number(/^(?:totals|summary):\s+(\d+)/m.exec(readFileSync(path.join(outDir, file), 'utf8'))[1]);
    counts[n] = {
      main: total(`n${n}-01`),
      all: threads.reduce((sum, file) => sum + total(file), 0),
    };
  }
  if (!process.env.STORE_KEEP) rmSync(outDir, { recursive: true, force: true });
  const per = (kind) => Math.round((counts[large][kind] - counts[small][kind]) / (large - small));
  console.log(
    `Postgres store, instructions per delivery (N = ${small} and ${large}): main thread ${per('main').toLocaleString('en-US')}, all threads ${per('all').toLocaleString('en-US')}`,
  );
}

async function child(n) {
  const { DELIVERY_RULES } = await import('@keyhook/core/store');
  const { countingLogger, EVENT_TYPE, eventData, loadPg, makeKeyhook, PG_URL, postgresReachable, TENANT } =
    await import('./peers.mjs');
  const unreachable = await postgresReachable();
  if (unreachable !== null) throw new Error(`no Postgres at ${PG_URL}: ${unreachable}`);
  const { createPostgresStore, pg } = await loadPg();
  const schema = `bench_${randomBytes(6).toString('hex')}`;
  const store = await createPostgresStore({ connectionString: PG_URL, schema, logger: countingLogger() });
  const keyhook = makeKeyhook(store, countingLogger());
  await keyhook.webhooks.create(TENANT, { url: 'http://127.0.0.1:9/hook', events: [EVENT_TYPE] });
  const id = (prefix) => `${prefix}_${randomBytes(13).toString('hex')}`;
  let seq = 0;
  let previous = [];
  const round = async () => {
    const lease = { limit: 1, leaseId: id('lease'), leaseMs: 60_000 };
    const publishes = Array.from({ length: 4 }, () => {
      const eventId = id('evt');
      const createdAt = new Date();
      const payload = JSON.stringify({
        id: eventId,
        type: EVENT_TYPE,
        createdAt: createdAt.toISOString(),
        data: eventData(seq++, Date.now()),
      });
      const event = {
        id: eventId,
        tenantId: TENANT,
        type: EVENT_TYPE,
        payload,
        createdAt,
        traceContext: null,
      };
      return store.publishEvent(event, () => id('dlv'), undefined, lease);
    });
    const successes = previous.map(({ delivery }) =>
      store.completeAttempt({
        tenantId: TENANT,
        deliveryId: delivery.id,
        leaseId: delivery.leaseId,
        attempt: {
          deliveryId: delivery.id,
          tenantId: TENANT,
          attempt: 1,
          startedAt: new Date(),
          durationMs: 3,
          statusCode: 200,
          error: null,
          responseBody: 'ok',
        },
        status: 'succeeded',
        dueAt: null,
        endpointFailures: 'reset',
        autoDisable: DELIVERY_RULES.autoDisable,
        at: new Date(),
      }),
    );
    const published = await Promise.all(publishes);
    for (const outcome of await Promise.all(successes))
      if (outcome.outcome !== 'recorded') throw new Error(`a success was ${outcome.outcome}`);
    previous = published.flatMap((outcome) => outcome.leased);
    if (previous.length !== 4) throw new Error(`4 publishes leased ${previous.length} deliveries`);
  };
  const warmup = Number(process.env.STORE_WARMUP ?? 1_500);
  for (let i = 0; i < (warmup + n) / 4; i++) await round();
  await keyhook.close();
  await store.close();
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
}
