import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Keyhook } from '@keyhook/core';
import { postgresAvailable } from '@keyhook/testing/postgres';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY, TestReceiver, waitUntil } from '@keyhook/testing/support';
import { afterEach, describe, expect, it } from 'vitest';
import {
  allDeliveries,
  type Backend,
  countBy,
  openPostgres,
  openSqlite,
  publishMany,
  receivedCounts,
  recordingLogger,
  repeated,
  TENANT,
  testKeyhook,
} from './delivery-load.js';
import { runFailedData } from './event-data.js';

const withPostgres = await postgresAvailable();

const FIXTURE = fileURLToPath(new URL('./fixtures/delivery-worker.mjs', import.meta.url));
const EVENTS = 300;
const CONCURRENCY = 8;
/**
 * Deliveries a worker holds in flight at most: one per slot being sent, and the answered ones
 * whose record waits to be written, up to twice the concurrency (RECORDING_PER_SLOT in
 * packages/core/src/delivery/worker.ts). The kill cuts short every one of them.
 */
const MOST_IN_FLIGHT = CONCURRENCY * 3;
const LEASE_MS = 1500;
/** The receiver's answer takes this long, so the worker always has attempts in flight. */
const RECEIVER_DELAY_MS = 30;

/**
 * A delivery worker in its own process, run the way dist/main.js runs (`node`, the packages'
 * builds): test/fixtures/delivery-worker.mjs.
 */
class WorkerProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(env: Record<string, string>) {
    this.child = spawn(process.execPath, [FIXTURE], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (chunk: Buffer) => {
      this.stdout += chunk.toString();
    });
    this.child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async started(): Promise<void> {
    await waitUntil(
      () => {
        if (!this.running) throw new Error(`the worker process exited before it started:\n${this.output()}`);
        return this.stdout.includes('worker started');
      },
      15_000,
      () => `the worker process did not start:\n${this.output()}`,
    );
  }

  output(): string {
    return `stdout:\n${this.stdout}\nstderr:\n${this.stderr}`;
  }
}

const backends = [
  { name: 'SQLite', available: true, open: () => openSqlite() },
  { name: 'Postgres', available: withPostgres, open: () => openPostgres('ref_kill') },
];

describe.each(backends)('a worker process killed with SIGKILL mid-load ($name)', (backend) => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it.skipIf(!backend.available)(
    `every one of ${EVENTS} events still arrives; only the attempts in flight at the kill are sent twice`,
    async () => {
      const started = performance.now();
      const opened: Backend = await backend.open();
      cleanups.push(() => opened.tearDown());
      const receiver = await TestReceiver.start();
      cleanups.push(() => receiver.close());
      receiver.on('/hook', (_request, _index, res) => {
        setTimeout(() => res.writeHead(200).end('ok'), RECEIVER_DELAY_MS);
      });
      const processes: WorkerProcess[] = [];
      cleanups.push(() => {
        for (const p of processes) if (p.running) p.child.kill('SIGKILL');
      });
      const launch = async () => {
        const worker = new WorkerProcess({
          ...opened.env,
          KEYHOOK_ADMIN_JWT_SECRET: TEST_ADMIN_SECRET,
          KEYHOOK_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
          WORKER_CONCURRENCY: String(CONCURRENCY),
          WORKER_LEASE_MS: String(LEASE_MS),
          WORKER_POLL_MS: '100',
        });
        processes.push(worker);
        await worker.started();
        return worker;
      };

      // The parent writes; it runs no worker of its own.
      const logger = recordingLogger();
      const keyhook: Keyhook = testKeyhook(opened.store, logger);
      cleanups.push(() => keyhook.close());
      const { webhook } = await keyhook.webhooks.create(TENANT, {
        url: receiver.url('/hook'),
        events: ['run.completed'],
      });
      const published = await publishMany([keyhook], EVENTS, 'kill');
      const eventIds = published.map((p) => p.event.id);
      expect(new Set(eventIds).size).toBe(EVENTS);
      expect(published.every((p) => p.deliveries.length === 1)).toBe(true);

      const first = await launch();
      await waitUntil(
        () => receivedCounts(receiver, '/hook').size >= EVENTS / 3,
        20_000,
        () => `the first worker sent too little (${receiver.requests.length} requests)\n${first.output()}`,
      );
      first.child.kill('SIGKILL');
      expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
      const receivedAtKill = receivedCounts(receiver, '/hook').size;

      // Nothing runs now: the deliveries in flight are exactly the attempts the kill cut short.
      const atKill = await allDeliveries(opened.store, webhook.id);
      const inFlightAtKill = new Set(atKill.filter((d) => d.status === 'in_flight').map((d) => d.eventId));
      expect(receivedAtKill).toBeLessThan(EVENTS); // some but not all
      expect(inFlightAtKill.size).toBeGreaterThan(0); // attempts were in flight
      expect(inFlightAtKill.size).toBeLessThanOrEqual(MOST_IN_FLIGHT);

      const restarted = performance.now();
      const second = await launch();
      await waitUntil(
        () => receivedCounts(receiver, '/hook').size === EVENTS,
        30_000,
        () =>
          `after the restart ${receivedCounts(receiver, '/hook').size}/${EVENTS} event ids arrived\n${second.output()}`,
      );
      const allReceivedAfter = performance.now() - restarted;
      // The last attempts are recorded just after their answer.
      let final = await allDeliveries(opened.store, webhook.id);
      await waitUntil(
        async () => {
          final = await allDeliveries(opened.store, webhook.id);
          return final.every((d) => d.status === 'succeeded');
        },
        10_000,
        () => `deliveries not all succeeded: ${JSON.stringify(countBy(final, (d) => d.status))}`,
      );
      // A lease that would (wrongly) run out again gets its chance to resend. Leases run out on the
      // worker process's wall clock (it takes no virtual clock), each within LEASE_MS of its attempt.
      const lastAttempt = Math.max(...final.map((d) => d.lastAttemptAt!.getTime()));
      await new Promise((resolve) => setTimeout(resolve, lastAttempt + LEASE_MS - Date.now()));
      // Then an event due after all of them: the worker leases in due order, so whatever it would
      // resend goes out with it or before, and SIGTERM's drain ends every attempt in flight.
      await keyhook.webhooks.create(TENANT, { url: receiver.url('/after'), events: ['run.failed'] });
      await keyhook.events.publish({ tenantId: TENANT, type: 'run.failed', data: runFailedData() });
      await waitUntil(
        () => receiver.to('/after').length === 1,
        10_000,
        () => `the event after the leases ran out did not arrive\n${second.output()}`,
      );
      second.child.kill('SIGTERM');
      expect((await second.exited).code).toBe(0);

      const counts = receivedCounts(receiver, '/hook');
      const twice = repeated(counts);
      console.log(
        `[kill -9, ${backend.name}] ${EVENTS} events, concurrency ${CONCURRENCY}: ${receivedAtKill} received ` +
          `before SIGKILL, ${inFlightAtKill.size} in flight at the kill; ${twice.length} event ids received ` +
          `twice (max ${Math.max(...counts.values())} times), ${receiver.to('/hook').length} requests in all; ` +
          `all received ${allReceivedAfter.toFixed(0)} ms after the restart (lease ${LEASE_MS} ms); ` +
          `test ${(performance.now() - started).toFixed(0)} ms`,
      );

      expect(eventIds.filter((id) => !counts.has(id))).toEqual([]);
      expect([...counts.keys()].filter((id) => !eventIds.includes(id))).toEqual([]);
      expect(twice.length).toBeLessThanOrEqual(MOST_IN_FLIGHT);
      // Only an attempt the kill cut short can repeat, and only once.
      expect(twice.filter((id) => !inFlightAtKill.has(id))).toEqual([]);
      expect(Math.max(...counts.values())).toBeLessThanOrEqual(2);
      expect(final).toHaveLength(EVENTS);
      expect(countBy(final, (d) => d.status)).toEqual({ succeeded: EVENTS });
      // The killed attempts were never recorded: each delivery counts the one attempt that finished.
      expect(final.filter((d) => d.attempts !== 1).map((d) => [d.eventId, d.attempts])).toEqual([]);
      expect(logger.lines.filter((line) => line.level !== 'info')).toEqual([]);
    },
    60_000,
  );
});
