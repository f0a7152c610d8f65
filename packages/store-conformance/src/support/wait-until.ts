/** How often `waitUntil` looks again. */
const POLL_MS = 20;

/**
 * Resolves once `condition` holds, looking again every 20 ms; rejects after `timeoutMs` with
 * `describe()` (what was seen instead). A condition that throws rejects at once. The tests'
 * one poll loop: a wait for a state, never for a while.
 */
export async function waitUntil(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  describe: () => string = () => 'the condition never held',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
