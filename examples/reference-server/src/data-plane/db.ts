import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReferenceEvent } from '../catalog.js';

export type SqlParam = string | number | null;

/**
 * One transaction of the data plane's tables, on SQLite or Postgres alike. The SQL is the subset both
 * speak: `?` placeholders (numbered for Postgres by the adapter), `ON CONFLICT`, `RETURNING`,
 * integer milliseconds for time and TEXT for JSON.
 */
export interface Tx {
  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined>;
  /** Runs a write; resolves with the number of rows it changed. */
  run(sql: string, params?: readonly SqlParam[]): Promise<number>;
  /** Runs statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * Publishes a keyhook event inside this transaction: it commits or rolls back with the state
   * change that caused it (SQLite: `events.publishSync` on the shared connection; Postgres:
   * `events.publish` on this transaction's client).
   */
  publish(input: ReferenceEvent): Promise<void>;
}

export interface StagingDb {
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * Runs `work` in one transaction and commits, or rolls back when it throws. `work` may await
   * only this transaction's own calls: on SQLite the transaction holds the connection, and
   * other work waits for it.
   */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Reads outside a transaction (each statement sees committed data). */
  read<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The reference server's directory (the nearest package.json), from src/ under tests or dist/ once built. */
export function packageDir(moduleUrl: string): string {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('staging: no package.json above this module');
    dir = parent;
  }
  return dir;
}

/**
 * Rows one chunk of a large write (a snapshot, a generation build, a clean-up) handles in one
 * short transaction; between chunks the work yields to the event loop (data-plane.md §5), so no
 * request waits behind more than one chunk.
 */
export const CHUNK_ROWS = 500;

/** Lets the event loop run what is waiting (I/O, timers) before the next chunk. */
export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Runs async work one at a time, in call order: SQLite's single connection, shared with keyhook. */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(work: () => Promise<T>): Promise<T> {
    const result = this.tail.then(work);
    this.tail = result.catch(() => {});
    return result;
  }
}
