import { useEffect } from 'preact/hooks';

/** How often a page showing a delivery that is about to move loads it again. */
const REFRESH_MS = 2_000;

/**
 * A delivery that leaves its state on its own within seconds: queued, being sent, or retried
 * within half a minute. While a page shows one, it loads again, so a test event or a retry is
 * seen arriving without a click.
 */
export function settlesSoon(
  delivery: { status: string; nextAttemptAt: string | null },
  now = Date.now(),
): boolean {
  if (delivery.status === 'pending' || delivery.status === 'in_flight') return true;
  return (
    delivery.status === 'retry_scheduled' &&
    delivery.nextAttemptAt !== null &&
    Date.parse(delivery.nextAttemptAt) - now < 30_000
  );
}

/** Calls `reload` once `REFRESH_MS` after each new `data`, while `active`. */
export function useRefreshWhile(active: boolean, data: unknown, reload: () => void): void {
  useEffect(() => {
    if (!active) return;
    const timer = setTimeout(reload, REFRESH_MS);
    return () => clearTimeout(timer);
  }, [active, data, reload]);
}
