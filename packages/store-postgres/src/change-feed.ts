import type { Logger } from '@keyhook/core';
import type pg from 'pg';

/** The channel of migration 0002's trigger; the payload is `<schema>:<key id>`. */
export const KEY_CHANGE_CHANNEL = 'keyhook_key_changes';

/** How long a revoke or rotate waits to hear its own notification before it answers anyway. */
const OWN_NOTIFICATION_WAIT_MS = 1000;
const RECONNECT_DELAYS_MS = [100, 250, 500, 1000, 2000, 5000];

/**
 * LISTENs on one dedicated pool connection. Its version moves on every notification for this
 * schema and on every reconnect; while it is not listening the version is null, so core caches
 * nothing and every verification reads the database.
 */
export class KeyChangeFeed {
  private client: pg.PoolClient | null = null;
  private generation = 0;
  private stopped = false;
  private retry: NodeJS.Timeout | undefined;
  private attempt = 0;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly pool: pg.Pool,
    private readonly schema: string,
    private readonly logger: Logger,
  ) {}

  /** Resolves once listening; rejects when the first connection fails. */
  async start(): Promise<void> {
    await this.connect();
  }

  version(): number | null {
    return this.client === null ? null : this.generation;
  }

  /**
   * Call before the statement that changes key `id`: `seen` resolves when this feed hears the
   * change's notification, which the server sends to every listening instance at commit.
   * It resolves at once when not listening, and after a bounded wait in any case.
   */
  expect(id: string): { seen: Promise<void>; cancel(): void } {
    if (this.client === null) return { seen: Promise.resolve(), cancel: () => {} };
    let done!: () => void;
    const seen = new Promise<void>((resolve) => (done = resolve));
    const timer = setTimeout(() => finish(), OWN_NOTIFICATION_WAIT_MS);
    const finish = () => {
      clearTimeout(timer);
      this.waiters.get(id)?.delete(finish);
      if (this.waiters.get(id)?.size === 0) this.waiters.delete(id);
      done();
    };
    const set = this.waiters.get(id) ?? new Set();
    set.add(finish);
    this.waiters.set(id, set);
    return { seen, cancel: finish };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    for (const set of this.waiters.values()) for (const finish of [...set]) finish();
    // Destroyed, not returned: the pool must not hand out a connection with our listeners on it.
    if (client) client.release(true);
  }

  private async connect(): Promise<void> {
    const client = await this.pool.connect();
    client.on('notification', (message) => this.onNotification(message.payload));
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    try {
      await client.query(`LISTEN ${KEY_CHANGE_CHANNEL}`);
    } catch (error) {
      client.release(error instanceof Error ? error : true);
      throw error;
    }
    if (this.stopped) {
      client.release();
      return;
    }
    // A new generation: whatever was cached before this connection may have missed a notification.
    this.generation++;
    this.attempt = 0;
    this.client = client;
  }

  private onNotification(payload: string | undefined): void {
    if (!payload) return;
    const separator = payload.indexOf(':');
    if (payload.slice(0, separator) !== this.schema) return;
    this.generation++;
    const waiting = this.waiters.get(payload.slice(separator + 1));
    if (waiting) for (const finish of [...waiting]) finish();
  }

  private lost(client: pg.PoolClient, error?: Error): void {
    if (this.client !== client) return;
    this.client = null;
    client.release(error ?? true);
    if (this.stopped) return;
    this.logger.warn(
      { err: error },
      'keyhook key-change listener lost; verifying every key against the database',
    );
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const delay = RECONNECT_DELAYS_MS[Math.min(this.attempt++, RECONNECT_DELAYS_MS.length - 1)]!;
    this.retry = setTimeout(() => {
      this.connect().catch(() => {
        if (!this.stopped) this.scheduleReconnect();
      });
    }, delay);
    this.retry.unref();
  }
}
