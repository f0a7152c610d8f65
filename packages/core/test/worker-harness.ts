import {
  createKeyhook,
  type DeliveryWorker,
  type DeliveryWorkerOptions,
  type EventCatalog,
  type Keyhook,
  type KeyhookOptions,
  MemoryStore,
  type ScopeInput,
  type ScopeNameOf,
  silentLogger,
} from '@keyhook/core';
import {
  TEST_ADMIN_SECRET,
  TEST_ENCRYPTION_KEY,
  TEST_EVENTS,
  TEST_SCOPES,
  VirtualClock,
} from '@keyhook/testing/support';

/** A retry schedule's step for `delivery.retrySchedule: [RETRY_MS]`: a minute on the virtual clock. */
export const RETRY_MS = 60_000;
/** How far to advance the clock after a failed attempt for its retry to be due (the step, +10 % jitter). */
export const RETRY_DUE_MS = Math.ceil(RETRY_MS * 1.1);

/**
 * What a test may set beside the defaults. The clock, when given, is a VirtualClock: it is the
 * keyhook's timers too, so `timers` is not set apart from it.
 */
export type HarnessOptions<Scopes extends readonly ScopeInput[], Catalog extends EventCatalog> = Omit<
  Partial<KeyhookOptions<Scopes, Catalog>>,
  'clock' | 'timers'
> & { clock?: VirtualClock };

export interface Harness<K> {
  keyhook: K;
  /** The keyhook's clock and timers: its polls and retries come due only as the test advances it. */
  clock: VirtualClock;
}

/**
 * A keyhook for a unit test: the tests' catalog, a MemoryStore, the test admin secret and encryption key, a silent
 * logger, development mode (receivers on 127.0.0.1), and one VirtualClock as both clock and
 * timers; `overrides` replaces any of these. Nothing in it waits on the wall clock.
 */
export function testKeyhook<
  const Scopes extends readonly ScopeInput[] = typeof TEST_SCOPES,
  const Catalog extends EventCatalog = typeof TEST_EVENTS,
>(overrides: HarnessOptions<Scopes, Catalog> = {}): Harness<Keyhook<ScopeNameOf<Scopes>, Catalog>> {
  const clock = overrides.clock ?? new VirtualClock();
  const keyhook = createKeyhook<Scopes, Catalog>({
    // The tests' catalog unless the test brings its own.
    scopes: TEST_SCOPES as unknown as Scopes,
    eventCatalog: TEST_EVENTS as unknown as Catalog,
    store: new MemoryStore(),
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    mode: 'development',
    ...overrides,
    clock,
    timers: clock,
  });
  return { keyhook, clock };
}

/**
 * testKeyhook() with its delivery worker started. A publish hands its deliveries to the worker
 * at once, so the first attempt goes out over real HTTP without time moving (wait for it with
 * the receiver); a retry, a poll or a backoff happens only when the test advances `clock`.
 */
export function startedKeyhook<
  const Scopes extends readonly ScopeInput[] = typeof TEST_SCOPES,
  const Catalog extends EventCatalog = typeof TEST_EVENTS,
>(
  overrides: HarnessOptions<Scopes, Catalog> = {},
  workerOptions: DeliveryWorkerOptions = {},
): Harness<Keyhook<ScopeNameOf<Scopes>, Catalog>> & { worker: DeliveryWorker } {
  const started = testKeyhook(overrides);
  const worker = started.keyhook.createWorker(workerOptions);
  worker.start();
  return { ...started, worker };
}

/**
 * Waits until `check` passes, for what real I/O brings (an answer from the receiver, and its
 * record): it checks again at each turn of the event loop, never on a timer, and the last
 * failure is the test's after `timeoutMs` of real time. Time on the clock never moves here.
 */
export async function eventually(check: () => Promise<void> | void, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
}
