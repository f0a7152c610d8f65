/**
 * A no-op: SQLite has no signal that crosses connections or processes (its update hook sees
 * this connection's own writes only), so workers in other processes learn of new work by
 * polling. Core wakes its own workers after its own publishes and requeues.
 */
export function watchDeliveries(_listener: () => void): () => void {
  return () => {};
}
