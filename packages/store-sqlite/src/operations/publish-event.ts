import type { EventRecord, LeasedDelivery, PublishLease, PublishOutcome } from '@keyhook/core/store';
import { leasedSubscribers, newDeliveryRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  deliveryValues,
  EVENT_COLUMNS,
  type EventRow,
  eventValues,
  placeholdersFor,
  toEventRecord,
} from '../delivery-row.js';
import { eventById, insertDelivery } from '../shared-statements.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

/** A subscriber as the publish reads it when it leases nothing. */
type Subscriber = Pick<WebhookRow, 'id' | 'status' | 'rate_per_second'>;

/** Every statement a publish runs: the event, its subscribers, their deliveries. */
export interface PublishEventStatements {
  insertEvent: Database.Statement<unknown[]>;
  eventById: Database.Statement<[string, string], EventRow>;
  subscribers: Database.Statement<[string, string], Subscriber>;
  subscriberRows: Database.Statement<[string, string], WebhookRow>;
  insertDelivery: Database.Statement<unknown[]>;
}

/** publishEvent's statements, and publishEventSync's savepoint around the publish. */
export interface PreparedPublishEvent extends PublishEventStatements {
  inSavepoint: Database.Transaction<(event: EventRecord, newDeliveryId: () => string) => PublishOutcome>;
}

function publishStatements(db: Database.Database): PublishEventStatements {
  return {
    // DO NOTHING: an event id the tenant already has writes nothing, and changes says so. The
    // event takes the next place in the events feed under the write lock it commits under
    // (migration 0014, docs/decisions.md §8.17), read from the last entry of keyhook_events_feed_seq.
    insertEvent: db.prepare(
      `INSERT INTO keyhook_events (${EVENT_COLUMNS}, feed_seq)
        VALUES (${placeholdersFor(EVENT_COLUMNS)}, (SELECT coalesce(max(feed_seq), 0) + 1 FROM keyhook_events))
        ON CONFLICT (tenant_id, id) DO NOTHING`,
    ),
    eventById: eventById(db),
    // The tenant's webhooks whose event set (a JSON array) holds the type, active or not; whole
    // rows only when the publish leases a delivery (the attempt needs its URL and secret).
    subscribers: db.prepare(
      `SELECT id, status, rate_per_second FROM keyhook_webhooks
        WHERE tenant_id = ? AND EXISTS (SELECT 1 FROM json_each(keyhook_webhooks.events) WHERE value = ?)
        ORDER BY id`,
    ),
    subscriberRows: db.prepare(
      `SELECT ${WEBHOOK_COLUMNS} FROM keyhook_webhooks
        WHERE tenant_id = ? AND EXISTS (SELECT 1 FROM json_each(keyhook_webhooks.events) WHERE value = ?)
        ORDER BY id`,
    ),
    insertDelivery: insertDelivery(db),
  };
}

export function preparePublishEvent(db: Database.Database): PreparedPublishEvent {
  const sql = publishStatements(db);
  return {
    ...sql,
    // Called inside the caller's transaction, a transaction function runs in a savepoint of it.
    inSavepoint: db.transaction((event: EventRecord, newDeliveryId: () => string) =>
      publishEvent(sql, event, newDeliveryId, undefined),
    ),
  };
}

/**
 * SQLite cannot join a caller's transaction: a transaction belongs to one connection, and the
 * store's statements are prepared on its own. Given one, this throws a TypeError rather than
 * write outside it; for a transactional outbox, the Postgres store can join one.
 */
export function refuseTransaction(transaction: unknown): void {
  if (transaction !== undefined) {
    throw new TypeError(
      'keyhook: the SQLite store cannot join a transaction; call publishEvent without one ' +
        '(or use @keyhook/store-postgres to publish inside your own transaction)',
    );
  }
}

/**
 * The event and one delivery per subscriber, as a plain function: the store runs it in a group
 * commit (group-commit.ts), which makes it atomic. The subscriber set is read under the write
 * lock that setWebhookStatus also takes, so no delivery is written pending for an endpoint that
 * another connection just disabled.
 */
export function publishEvent(
  sql: PublishEventStatements,
  event: EventRecord,
  newDeliveryId: () => string,
  lease: PublishLease | undefined,
): PublishOutcome {
  if (sql.insertEvent.run(eventValues(event)).changes === 0) {
    const stored = sql.eventById.get(event.tenantId, event.id)!;
    return { outcome: 'duplicate', event: toEventRecord(stored) };
  }
  const subscribers: readonly Subscriber[] = (lease ? sql.subscriberRows : sql.subscribers).all(
    event.tenantId,
    event.type,
  );
  const candidates = subscribers.map((webhook) => ({
    webhook,
    status: webhook.status,
    deliveryRate: webhook.rate_per_second === null ? null : { perSecond: webhook.rate_per_second },
  }));
  const toLease = new Set([...leasedSubscribers(candidates, lease)].map(({ webhook }) => webhook));
  const leased: LeasedDelivery[] = [];
  const deliveries = subscribers.map((webhook) => {
    const forLease = toLease.has(webhook) ? lease : undefined;
    const delivery = newDeliveryRecord(event, webhook, newDeliveryId(), forLease);
    sql.insertDelivery.run(deliveryValues(delivery));
    if (forLease) leased.push({ delivery, event, webhook: toWebhookRecord(webhook as WebhookRow) });
    return delivery;
  });
  return { outcome: 'published', event, deliveries, leased };
}

/**
 * publishEvent (without a lease) in a savepoint of the caller's transaction, open on the store's
 * connection. Its own module would be named as publish-event.ts plus a suffix, which
 * scripts/check-file-names.mjs refuses: it lives here, beside the publish it wraps.
 */
export function publishEventSync(
  prepared: PreparedPublishEvent,
  event: EventRecord,
  newDeliveryId: () => string,
): PublishOutcome {
  return prepared.inSavepoint(event, newDeliveryId);
}
