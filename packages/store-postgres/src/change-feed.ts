import type { Logger } from '@keyhook/core/store';
import type pg from 'pg';
import { checkOut } from './checkout.js';
import { DELIVERY_CHANNEL } from './shared-statements.js';

/** The channel of migration 0002's trigger; the payload is `<schema>:<key id>`. */
export const KEY_CHANGE_CHANNEL = 'keyhook_key_changes';

/** How long a revoke or rotate waits to hear its own notification before it answers anyway. */
const OWN_NOTIFICATION_WAIT_MS = 1000;
const RECONNECT_DELAYS_MS = [100, 250, 500, 1000, 2000, 5000];

/** Where the feed's notifications come from: a connection that LISTENs. */
export interface NotificationSource {
  /**
   * Whether `lost` is called when the connection goes. Only then may the verified-key cache rely
   * on the feed: a revoke sent while nobody listened would otherwise go unheard.
   */
  readonly reportsLoss: boolean;
  /** LISTENs on `channels`; resolves once listening, rejects when it could not. */
  listen(channels: readonly string[], events: ListenEvents): Promise<Listening>;
}

export interface ListenEvents {
  notification(channel: string, payload: string | undefined): void;
  /** The connection went (once); the feed reconnects. */
  lost(error?: Error): void;
  /** The library re-listened by itself after a loss it did not report (notifications meanwhile are lost). */
  resumed(): void;
}

export interface Listening {
  /** Stops listening and gives the connection back; safe to call twice. */
  close(): void;
}

/**
 * LISTEN on one connection of a pg pool, checked out for it and destroyed rather than returned
 * when it closes (the pool must not hand out a connection with the feed's listeners on it).
 */
export function poolNotifications(pool: pg.Pool): NotificationSource {
  return {
    reportsLoss: true,
    async listen(channels, events) {
      let closed = false;
      const close = () => {
        if (closed) return;
        closed = true;
        client.release(true);
      };
      const client: pg.PoolClient = await checkOut(pool, (error) => events.lost(error));
      client.on('notification', (message) => events.notification(message.channel, message.payload));
      client.on('end', () => events.lost());
      try {
        // Every channel on the one connection, in one round trip.
        await client.query(channels.map((channel) => `LISTEN ${channel}`).join('; '));
      } catch (error) {
        close();
        throw error;
      }
      return { close };
    },
  };
}

/**
 * LISTENs on one dedicated connection, for two uses. Key changes: `start()` (the opt-in
 * verified-key cache) listens from the store's creation on; the version moves on every key
 * notification for this schema and on every reconnect, and while it is not listening (or was
 * never started) the version is null, so core caches nothing and every verification reads the
 * database. Delivery wake-ups: the first `watchDeliveries` listens lazily on the same
 * connection (one LISTEN connection per store, never two), and the last unsubscribe gives it
 * back unless the key cache still needs it.
 */
export class KeyChangeFeed {
  private client: Listening | null = null;
  private generation = 0;
  private stopped = false;
  private keysWanted = false;
  /** A connect is running or a reconnect is scheduled: no second one is started. */
  private connecting = false;
  private retry: NodeJS.Timeout | undefined;
  private attempt = 0;
  private readonly waiters = new Map<string, Set<() => void>>();
  /** Boxed, so one function registered twice is two subscriptions, each removed by its own unsubscribe. */
  private readonly deliveryListeners = new Set<{ listener: () => void }>();

  constructor(
    private readonly source: NotificationSource,
    private readonly schema: string,
    private readonly logger: Logger,
  ) {}

  /** Listens for key changes. Resolves once listening; rejects when the first connection fails. */
  async start(): Promise<void> {
    this.keysWanted = true;
    if (this.client !== null) return;
    await this.connect();
  }

  version(): number | null {
    return !this.keysWanted || this.client === null ? null : this.generation;
  }

  /**
   * Calls `listener` on every delivery notification for this schema, and after every (re)connect
   * of the listening connection, since a notification sent while it was not listening is lost.
   * Starts listening when not yet; returns the unsubscribe.
   */
  watchDeliveries(listener: () => void): () => void {
    if (this.stopped) return () => {};
    const entry = { listener };
    this.deliveryListeners.add(entry);
    this.listen();
    return () => {
      if (!this.deliveryListeners.delete(entry)) return;
      if (!this.wanted()) this.quiet();
    };
  }

  /**
   * Call before the statement that changes key `id`: `seen` resolves when this feed hears the
   * change's notification, which the server sends to every listening instance at commit.
   * It resolves at once when not listening, and after a bounded wait in any case.
   */
  expect(id: string): { seen: Promise<void>; cancel(): void } {
    // Without the key cache nobody reads the version, so there is nothing to wait for.
    if (!this.keysWanted || this.client === null) return { seen: Promise.resolve(), cancel: () => {} };
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
    this.deliveryListeners.clear();
    for (const set of this.waiters.values()) for (const finish of [...set]) finish();
    client?.close();
  }

  private wanted(): boolean {
    return !this.stopped && (this.keysWanted || this.deliveryListeners.size > 0);
  }

  /** Starts connecting in the background unless listening or already on the way. */
  private listen(): void {
    if (this.client !== null || this.connecting) return;
    this.connecting = true;
    this.connect().then(
      () => {
        this.connecting = false;
      },
      (error: unknown) => {
        this.connecting = false;
        if (!this.wanted()) return;
        this.logger.warn(
          { err: error },
          'keyhook delivery listener could not connect; workers poll meanwhile',
        );
        this.scheduleReconnect();
      },
    );
  }

  /** Nobody needs the connection any more: give it back and stop reconnecting. */
  private quiet(): void {
    clearTimeout(this.retry);
    this.retry = undefined;
    this.connecting = false;
    const client = this.client;
    this.client = null;
    client?.close();
  }

  private async connect(): Promise<void> {
    let client: Listening | undefined;
    const listening = await this.source.listen([KEY_CHANGE_CHANNEL, DELIVERY_CHANNEL], {
      notification: (channel, payload) => this.onNotification(channel, payload),
      lost: (error) => {
        if (client) this.lost(client, error);
      },
      resumed: () => {
        if (this.client !== client) return;
        this.generation++;
        this.wakeDeliveryListeners();
      },
    });
    client = listening;
    // Stopped, unsubscribed, or another connect got there first meanwhile.
    if (!this.wanted() || this.client !== null) {
      client.close();
      return;
    }
    // A new generation: whatever was cached before this connection may have missed a notification.
    this.generation++;
    this.attempt = 0;
    this.client = client;
    // Deliveries may have been published while nobody listened: let the workers look now.
    this.wakeDeliveryListeners();
  }

  private onNotification(channel: string, payload: string | undefined): void {
    if (channel === DELIVERY_CHANNEL) {
      if (payload === this.schema) this.wakeDeliveryListeners();
      return;
    }
    if (!payload) return;
    const separator = payload.indexOf(':');
    if (payload.slice(0, separator) !== this.schema) return;
    this.generation++;
    const waiting = this.waiters.get(payload.slice(separator + 1));
    if (waiting) for (const finish of [...waiting]) finish();
  }

  private wakeDeliveryListeners(): void {
    for (const { listener } of [...this.deliveryListeners]) {
      try {
        listener();
      } catch (error) {
        // One listener's bug must not keep the others (or the connection's event loop) from running.
        this.logger.error({ err: error }, 'keyhook delivery listener threw');
      }
    }
  }

  private lost(client: Listening, error?: Error): void {
    if (this.client !== client) return;
    this.client = null;
    client.close();
    if (!this.wanted()) return;
    this.logger.warn(
      { err: error },
      this.keysWanted
        ? 'keyhook key-change listener lost; verifying every key against the database'
        : 'keyhook delivery listener lost; workers poll until it is back',
    );
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const delay = RECONNECT_DELAYS_MS[Math.min(this.attempt++, RECONNECT_DELAYS_MS.length - 1)]!;
    this.connecting = true;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect().then(
        () => {
          this.connecting = false;
        },
        () => {
          this.connecting = false;
          if (this.wanted()) this.scheduleReconnect();
        },
      );
    }, delay);
    this.retry.unref();
  }
}
