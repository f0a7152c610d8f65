import type { CompleteStore, OptionalCapability, Store } from '@keyhook/core/store';

export interface StoreHarness {
  name: string;
  /**
   * A fresh, empty store for one test. A store that leaves capabilities out names them in
   * `without`; the suite runs the rest.
   */
  create(): Promise<Store>;
  /**
   * The optional capabilities the store leaves out: their cases are skipped, and the suite checks
   * that the store has none of their members (a store keeps a capability whole or not at all).
   */
  without?: readonly OptionalCapability[];
  /**
   * Another store on the same database, as a second app instance would open it (its own
   * connection or pool). The memory store returns the same instance.
   */
  createPeer(store: Store): Promise<Store>;
  /** The stored row of a key, read straight from the database, every column as stored. */
  readKeyRow(store: Store, id: string): Promise<Record<string, unknown> | null>;
  /**
   * Resolves once the store's events feed shows every event committed before the call. On
   * Postgres the feed waits for every transaction of the cluster open at the time to end, and
   * other suites share the server. Default: at once.
   */
  settleFeed?(store: Store): Promise<void>;
  /**
   * False for a store opened so that it cannot hear another instance's key changes: its
   * `keyChangeVersion()` must then stay null, so core caches no verified key. Default true.
   */
  cachesVerifiedKeys?: boolean;
  /**
   * True when `publishEvent` can join a caller's transaction; such a harness gives
   * `hostTransaction`, for the cases that hold the store to it. Other stores must refuse one.
   */
  joinsTransactions?: boolean;
  /**
   * Given exactly when `joinsTransactions` is true: opens a host's transaction on the store's
   * database, of a kind the store joins (Postgres: a pg client after BEGIN), runs `work` with
   * what to pass as `transaction`, commits when it resolves and rolls back when it throws, and
   * returns its result (or rethrows). The harness owns BEGIN, COMMIT and ROLLBACK.
   */
  hostTransaction?<T>(store: Store, work: (transaction: unknown) => Promise<T>): Promise<T>;
  /**
   * For stores whose `publishEventSync` joins a host's synchronous transaction (SQLite): runs
   * `work` inside one, handing it what to pass as `transaction`, and returns its result (a throw
   * rolls it back). Other stores must refuse `publishEventSync` with a TypeError.
   */
  syncTransaction?<T>(store: Store, work: (transaction: unknown) => T): T;
  /**
   * For stores with migrations: writes the store's migrations table as a newer release, or an
   * edit of a migration file after it ran, would leave it. The store itself is left open.
   */
  migrations?: {
    /** Records migration `version`, named `name` as its file is (`9999_from_the_future`), as applied. */
    record(store: Store, version: number, name: string): Promise<void>;
    /** Replaces the checksum recorded for migration `version`. */
    setChecksum(store: Store, version: number, checksum: string): Promise<void>;
  };
}

export interface SuiteContext {
  store: CompleteStore;
  /** The harness's settleFeed for the case's store. */
  settleFeed(): Promise<void>;
  peer(): Promise<CompleteStore>;
  readKeyRow(id: string): Promise<Record<string, unknown> | null>;
}
