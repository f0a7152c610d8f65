/** docs/decisions.md §20.2: the longest one of keyhook's statements may take, by default. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5_000;
/** docs/decisions.md §20.2: the longest a transaction of the store's own pool may sit idle. */
export const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000;
/**
 * A statement whose work grows with a queue (holding or releasing an endpoint's deliveries,
 * deleting an endpoint with its history, counting the queue, expiring held deliveries) may take
 * this many times as long.
 */
const BULK_FACTOR = 12;
/** The client waits this much longer than the server, so the server cancels first and the connection lives on. */
const CLIENT_MARGIN_MS = 1_000;

/**
 * How long the store lets a statement run: on the server (`statement_timeout`, set on the store's
 * own pool; a host's pool keeps its own) and in the client (pg's `query_timeout`, on every
 * statement of the store, which also ends one sent into a network that no longer answers).
 * 0 turns both off.
 */
export class StatementBounds {
  constructor(
    readonly statementMs: number,
    /** Whether the server-side bound is the store's to change (its own pool) or the host's. */
    private readonly ownServerSide: boolean,
  ) {
    if (!Number.isInteger(statementMs) || statementMs < 0)
      throw new TypeError('statementTimeoutMs must be a non-negative integer (0: no bound).');
  }

  /** The client-side bound of a statement, in ms; undefined when there is none. */
  readTimeout(bulk: boolean): number | undefined {
    if (this.statementMs === 0) return undefined;
    return (bulk ? this.statementMs * BULK_FACTOR : this.statementMs) + CLIENT_MARGIN_MS;
  }

  /** The server-side bound of bulk statements, to set where they run; null when the server's bound is not the store's. */
  bulkServerMs(): number | null {
    return this.statementMs === 0 || !this.ownServerSide ? null : this.statementMs * BULK_FACTOR;
  }
}
