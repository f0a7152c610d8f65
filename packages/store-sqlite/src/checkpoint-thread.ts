import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from '@keyhook/core/store';
import type Database from 'better-sqlite3';

/** SQLite's own automatic checkpoint, in WAL pages: what the connection runs without the thread. */
export const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
/** With the thread, the store's connection checkpoints at this many WAL pages (16 MiB; §8.13). */
export const FALLBACK_AUTOCHECKPOINT_PAGES = 4000;
/** The thread's passes come at least this far apart, so a busy store costs it ~100 passes a second. */
export const CHECKPOINT_SPACING_MS = 10;
/** The thread starts after this many group commits: a store that writes little never starts it. */
export const COMMITS_BEFORE_THREAD = 64;

// The cells the two threads share (Int32Array indexes; checkpointLoop uses the numbers).
/** Writes since the thread's last pass; the first one of a round wakes it. */
const WRITES = 0;
/** Set to 1 to stop the thread. */
const STOP = 1;
/** Passes the thread has finished (tests wait on it). */
const PASSES = 2;

/**
 * The thread's body, run as a script of its own (`eval`): it must use nothing of this module,
 * and loads modules through `load`, which no build step rewrites (esbuild turns a bare `require`
 * of ESM output into a helper the thread would not have).
 * Each round it waits for a commit, runs a PASSIVE checkpoint on its own connection (which
 * never takes the write lock, so the store's writes go on meanwhile), and sleeps the spacing.
 */
function checkpointLoop(load: NodeJS.Require): void {
  const { parentPort, workerData } = load('node:worker_threads');
  const Driver = load(workerData.driver);
  const cells = new Int32Array(workerData.cells);
  const db = new Driver(workerData.filename, { fileMustExist: true, timeout: 0 });
  let failing: string | undefined;
  try {
    // As on the store's connection: the checkpoint syncs the WAL before it copies, and the file after.
    db.pragma('synchronous = NORMAL');
    for (;;) {
      Atomics.wait(cells, 0, 0);
      if (Atomics.load(cells, 1) === 1) return;
      Atomics.store(cells, 0, 0);
      // Told once per run of failures (a full disk fails every pass), and when one succeeds again.
      try {
        db.pragma('wal_checkpoint(PASSIVE)');
        if (failing !== undefined) parentPort.postMessage({ recovered: failing });
        failing = undefined;
      } catch (error) {
        const message = String((error as Error)?.message ?? error);
        if (message !== failing) parentPort.postMessage({ failed: message });
        failing = message;
      }
      Atomics.add(cells, 2, 1);
      Atomics.wait(cells, 1, 0, workerData.spacingMs);
      if (Atomics.load(cells, 1) === 1) return;
    }
  } finally {
    db.close();
  }
}

export interface CheckpointThreadOptions {
  /** The module the thread loads its connection from. Default: the better-sqlite3 this package resolves. */
  driver?: string | undefined;
  commitsBeforeThread?: number | undefined;
}

/**
 * WAL checkpoints on a thread of their own, with its own connection to the same file
 * (docs/decisions.md §8.13 says why). The store's connection checkpoints only at
 * FALLBACK_AUTOCHECKPOINT_PAGES meanwhile; a thread that cannot start or fails is logged, and the
 * connection checkpoints as SQLite's default.
 */
export class CheckpointThread {
  private readonly cells = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
  /** The file, absolute: the thread opens it after the store, whatever the working directory is by then. */
  private readonly filename: string;
  private readonly commitsBeforeThread: number;
  private state: 'waiting' | 'running' | 'over' = 'waiting';
  /** Rows this connection has written since it opened, as SQLite counts them. */
  private readonly totalChanges: Database.Statement<[], number>;
  private changesSeen = 0;
  private woken = 0;
  private commits = 0;
  private worker: Worker | undefined;
  private exited: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database.Database,
    private readonly logger: Logger,
    private readonly options: CheckpointThreadOptions = {},
  ) {
    this.filename = resolve(db.name);
    this.totalChanges = db.prepare<[], number>('SELECT total_changes()').pluck();
    this.commitsBeforeThread = options.commitsBeforeThread ?? COMMITS_BEFORE_THREAD;
  }

  /** Passes the thread has finished. */
  get passes(): number {
    return Atomics.load(this.cells, PASSES);
  }

  /** Writes the thread was told of (each group commit, each other statement that wrote). */
  get wakes(): number {
    return this.woken;
  }

  /** Whether the thread runs: started, and not failed or stopped. */
  get running(): boolean {
    return this.state === 'running';
  }

  /** After each group commit: wakes the thread, which starts at the COMMITS_BEFORE_THREAD-th. */
  committed(): void {
    if (this.state === 'waiting' && ++this.commits >= this.commitsBeforeThread) this.start();
    if (this.state === 'running') this.wake();
  }

  /**
   * After any other write of the store's: wakes a running thread when the connection wrote
   * (a bulk recovery or a purge would otherwise wait for the fallback, a checkpoint four times
   * the default on the event loop). It costs one `total_changes()`, so the store calls it after
   * its writes only.
   */
  ranStatement(): void {
    if (this.state !== 'running') return;
    let changes: number;
    try {
      changes = this.totalChanges.get() ?? 0;
    } catch {
      return; // the statement's own answer stands; this write waits for the next wake
    }
    if (changes === this.changesSeen) return;
    this.changesSeen = changes;
    this.wake();
  }

  private wake(): void {
    this.woken++;
    if (Atomics.add(this.cells, WRITES, 1) === 0) Atomics.notify(this.cells, WRITES);
  }

  /** Stops the thread, which closes its connection, and resolves once it has exited. */
  async stop(): Promise<void> {
    if (this.state === 'waiting') this.state = 'over';
    // Referenced again: the process stays up until the thread has closed its connection.
    this.worker?.ref();
    Atomics.store(this.cells, STOP, 1);
    Atomics.add(this.cells, WRITES, 1);
    Atomics.notify(this.cells, WRITES);
    Atomics.notify(this.cells, STOP);
    await this.exited;
  }

  /** Never throws: it runs after a commit whose callers are still to be answered. */
  private start(): void {
    this.state = 'running';
    try {
      this.startWorker();
    } catch (error) {
      this.state = 'over';
      void this.worker?.terminate();
      this.fellBack(error);
    }
  }

  private startWorker(): void {
    // Its first pass copies whatever was written before it.
    this.changesSeen = this.totalChanges.get() ?? 0;
    // Its own `require`, made in either kind of script: a process run as ES modules by default
    // (`--input-type=module`, `--experimental-default-type=module`) evaluates it as a module.
    const source = `import('node:module').then(({ createRequire }) =>
      (${checkpointLoop.toString()})(createRequire(${JSON.stringify(import.meta.url)})))`;
    const worker = new Worker(source, {
      eval: true,
      workerData: {
        driver: this.options.driver ?? createRequire(import.meta.url).resolve('better-sqlite3'),
        filename: this.filename,
        cells: this.cells.buffer,
        spacingMs: CHECKPOINT_SPACING_MS,
      },
    });
    this.worker = worker;
    // The thread never keeps the process alive: a process that exits without close() cuts a
    // checkpoint short, which SQLite recovers from.
    worker.unref();
    worker.on('message', (message: { failed: string } | { recovered: string }) => {
      if ('failed' in message) {
        this.logger.warn({ err: message.failed }, 'keyhook: background WAL checkpoints fail');
      } else {
        this.logger.info({ err: message.recovered }, 'keyhook: background WAL checkpoints succeed again');
      }
    });
    worker.on('error', (error) => this.fellBack(error));
    this.exited = new Promise<void>((done) => {
      worker.once('exit', () => {
        this.state = 'over';
        this.worker = undefined;
        if (this.db.open) this.db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
        done();
      });
    });
    this.db.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  }

  private fellBack(error: unknown): void {
    this.logger.warn(
      { err: error instanceof Error ? error.message : String(error) },
      'keyhook: the WAL checkpoint thread stopped; the store checkpoints on its own connection',
    );
  }
}
