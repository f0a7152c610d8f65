/** How long a drain may take before the process gives up on requests still in flight. */
export const DRAIN_TIMEOUT_MS = 20_000;

export interface DrainOptions {
  close: () => Promise<void>;
  log: (message: string, error?: unknown) => void;
  timeoutMs?: number;
  exit?: (code: number) => void;
}

/**
 * data-plane.md §7.2: SIGTERM (and SIGINT) drain. The server stops taking connections,
 * requests in flight finish, background writes flush, the store closes, and the process exits 0.
 * A second signal, or a drain past the timeout, exits 1 at once.
 */
export function drainOnSignals(options: DrainOptions): void {
  const exit = options.exit ?? ((code: number) => process.exit(code));
  let draining = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (draining) {
      options.log(`${signal} again: exiting without waiting for the drain`);
      exit(1);
      return;
    }
    draining = true;
    options.log(`${signal} received: draining (no new connections; requests in flight may finish)`);
    const timer = setTimeout(() => {
      options.log(`drain still running after ${options.timeoutMs ?? DRAIN_TIMEOUT_MS} ms: exiting`);
      exit(1);
    }, options.timeoutMs ?? DRAIN_TIMEOUT_MS);
    timer.unref();
    options.close().then(
      () => {
        clearTimeout(timer);
        options.log('drained: exiting');
        exit(0);
      },
      (error: unknown) => {
        clearTimeout(timer);
        options.log('drain failed', error);
        exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
