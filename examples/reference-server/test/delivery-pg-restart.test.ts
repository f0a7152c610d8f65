/**
 * Restarts the real PostgreSQL cluster under a running delivery worker. Every other test that
 * uses Postgres at that moment would break, so vitest.config.ts leaves this file out unless
 * KEYHOOK_PG_RESTART_TEST=1, and CI runs it alone after `npm test` (as root or the cluster's
 * owner, with pg_ctlcluster on the PATH):
 *
 *   cd examples/reference-server && KEYHOOK_PG_RESTART_TEST=1 npx vitest run test/delivery-pg-restart.test.ts
 */
import { exec, execSync } from 'node:child_process';
import { promisify } from 'node:util';
import type { Keyhook } from '@keyhook/core';
import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import { TestReceiver, waitUntil } from '@keyhook/testing/support';
import { afterAll, describe, expect, it } from 'vitest';
import {
  allDeliveries,
  type Backend,
  countBy,
  type LogLine,
  openPostgres,
  publishMany,
  receivedCounts,
  recordingLogger,
  repeated,
  TENANT,
  testKeyhook,
} from './delivery-load.js';
import { runFailedData } from './event-data.js';

// Included only on purpose (see vitest.config.ts): then a missing Postgres is a failure, not a skip.
if (!(await postgresAvailable())) throw new Error('the restart test needs PostgreSQL on 127.0.0.1:5432');

const CLUSTER = 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main';
const EVENTS = 200;
const CONCURRENCY = 4;
/** Long enough that an attempt finished during the restart is still recorded by its own lease. */
const LEASE_MS = 8000;
const RECEIVER_DELAY_MS = 40;
/** Publishers of other events running through the restart (the store's pool has 10 connections). */
const TRAFFIC_LANES = 3;

const shell = promisify(exec);
const server = new URL(POSTGRES_TEST_URL);

/** Waits for pg_isready; true once the server accepts connections. */
function waitForPostgres(timeoutMs: number): boolean {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      execSync(`pg_isready -h ${server.hostname} -p ${server.port || 5432} -t 1`, { stdio: 'ignore' });
      return true;
    } catch {
      execSync('sleep 0.2');
    }
  }
  return false;
}

/** One log line, its error as a message only (pg-pool hangs the whole client on `err.client`). */
function describeLine(line: LogLine): string {
  const { err, ...rest } = line.context as { err?: unknown };
  const error = err instanceof Error ? `${(err as { code?: string }).code ?? ''} ${err.message}` : err;
  return `  ${line.level} ${line.msg} ${JSON.stringify({ ...rest, ...(err !== undefined && { err: error }) })}`;
}

describe('the PostgreSQL server restarts under a running worker', () => {
  let backend: Backend | undefined;
  let keyhook: Keyhook | undefined;
  let receiver: TestReceiver | undefined;
  const cleanups: (() => void)[] = [];

  afterAll(async () => {
    for (const cleanup of cleanups) cleanup();
    // Postgres must be up again whatever happened, for whatever runs next.
    try {
      execSync(`${CLUSTER} start`, { shell: '/bin/sh', stdio: 'ignore' });
    } catch {
      // already running
    }
    const up = waitForPostgres(30_000);
    await keyhook?.close();
    await receiver?.close();
    await backend?.tearDown();
    if (!up) throw new Error('PostgreSQL did not come back after the restart test');
  });

  it(`the worker logs a backoff, recovers, and all ${EVENTS} events arrive (repeats bounded by concurrency)`, async () => {
    // A pg client error nobody listens for is an uncaught exception: in a real process, a crash.
    const escaped: Error[] = [];
    const onEscaped = (error: Error) => escaped.push(error);
    process.on('uncaughtException', onEscaped);
    cleanups.push(() => process.off('uncaughtException', onEscaped));
    const logger = recordingLogger();
    // The store's pool reports its idle connections dying to the same logger.
    backend = await openPostgres('ref_pgrestart', logger);
    receiver = await TestReceiver.start();
    receiver.on('/hook', (_request, _index, res) => {
      setTimeout(() => res.writeHead(200).end('ok'), RECEIVER_DELAY_MS);
    });
    keyhook = testKeyhook(backend.store, logger);
    const { webhook } = await keyhook.webhooks.create(TENANT, {
      url: receiver.url('/hook'),
      events: ['run.completed'],
    });
    const published = await publishMany([keyhook], EVENTS, 'pgrestart');
    const eventIds = published.map((p) => p.event.id);

    const started = performance.now();
    const worker = keyhook.createWorker({ concurrency: CONCURRENCY, leaseMs: LEASE_MS, pollIntervalMs: 200 });
    worker.start();
    // The host keeps publishing other events (no webhook takes run.failed) all along, so store
    // transactions are open when the server goes down, as they would be in production.
    const traffic = { published: 0, refused: 0 };
    let trafficRuns = true;
    const lanes = Array.from({ length: TRAFFIC_LANES }, async (_, lane) => {
      for (let n = 0; trafficRuns; n++) {
        try {
          await keyhook!.events.publish({
            tenantId: TENANT,
            type: 'run.failed',
            data: runFailedData({ lane, n }),
          });
          traffic.published++;
        } catch {
          traffic.refused++;
          // A refused publisher tries again at a host's pace: the lanes keep publishing through the outage.
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    });
    cleanups.push(() => {
      trafficRuns = false;
    });
    await waitUntil(
      () => receivedCounts(receiver!, '/hook').size >= EVENTS / 4,
      20_000,
      () => `only ${receiver!.requests.length} requests before the restart`,
    );
    const beforeRestart = receivedCounts(receiver, '/hook').size;
    // Asynchronously, so the worker keeps running (and failing) while the server is down.
    const restartStarted = performance.now();
    await shell(`${CLUSTER} restart`, { shell: '/bin/sh' });
    const restartMs = performance.now() - restartStarted;
    expect(waitForPostgres(30_000)).toBe(true);

    await waitUntil(
      () => receivedCounts(receiver!, '/hook').size === EVENTS,
      40_000,
      () =>
        `${receivedCounts(receiver!, '/hook').size}/${EVENTS} event ids arrived; log:\n` +
        logger.lines.map(describeLine).join('\n'),
    );
    const allIn = performance.now() - started;
    trafficRuns = false;
    await Promise.all(lanes);
    let final = await allDeliveries(backend.store, webhook.id);
    await waitUntil(
      async () => {
        final = await allDeliveries(backend!.store, webhook.id);
        return final.every((d) => d.status === 'succeeded');
      },
      15_000,
      () => `deliveries not all succeeded: ${JSON.stringify(countBy(final, (d) => d.status))}`,
    );
    // The stop waits for the attempts in flight; every delivery is final in the store already.
    await worker.stop();

    const counts = receivedCounts(receiver, '/hook');
    const twice = repeated(counts);
    const warnings = logger.lines.filter((line) => line.level === 'warn');
    console.log(
      `[Postgres restart] ${EVENTS} events, concurrency ${CONCURRENCY}: ${beforeRestart} received before ` +
        `the restart (which took ${restartMs.toFixed(0)} ms); ${twice.length} event ids received twice, ` +
        `${receiver.to('/hook').length} requests in all; all received ${allIn.toFixed(0)} ms after the worker ` +
        `started; other traffic: ${traffic.published} publishes, ${traffic.refused} refused; ` +
        `${escaped.length} uncaught exceptions. Log:\n` +
        logger.lines.map(describeLine).join('\n'),
    );

    expect(escaped.map((error) => `${error.message}\n${error.stack}`)).toEqual([]);
    expect(beforeRestart).toBeLessThan(EVENTS);
    expect(traffic.refused).toBeGreaterThan(0); // the outage was seen by the host as well
    expect(warnings.some((line) => /delivery worker could not .*; backing off/.test(line.msg))).toBe(true);
    expect(logger.lines.some((line) => line.msg === 'keyhook: delivery worker reached the store again')).toBe(
      true,
    );
    expect(logger.lines.filter((line) => line.level === 'error')).toEqual([]);
    expect(eventIds.filter((id) => !counts.has(id))).toEqual([]);
    expect(twice.length).toBeLessThanOrEqual(CONCURRENCY);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
    expect(countBy(final, (d) => d.status)).toEqual({ succeeded: EVENTS });
  }, 60_000);
});
