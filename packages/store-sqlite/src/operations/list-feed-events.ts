import type { FeedEntry, FeedPage, FeedQuery } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import {
  DELIVERY_COLUMNS,
  type DeliveryRow,
  EVENT_COLUMNS,
  type EventRow,
  toDeliveryRecord,
  toEventRecord,
} from '../delivery-row.js';
import { boundLimit } from '../shared-statements.js';

interface PageParams {
  tenantId: string;
  from: number;
  since: number;
  limit: number;
  type: string | null;
  budget: number | null;
}

/**
 * The events feed's reads (docs/decisions.md §8.17), on the places migration 0014 gives events:
 * one deferred transaction, so the after event, the page and the deliveries come from one WAL
 * snapshot. Every read is tenant-first on keyhook_events_feed or keyhook_events_feed_type, and
 * the deliveries on keyhook_deliveries_event.
 */
export function prepareListFeedEvents(
  db: Database.Database,
): Database.Transaction<(tenantId: string, query: FeedQuery) => FeedPage> {
  const afterEvent = db.prepare<[string, string], EventRow & { feed_seq: number }>(
    `SELECT ${EVENT_COLUMNS}, feed_seq FROM keyhook_events
      WHERE tenant_id = ? AND id = ? AND feed_seq IS NOT NULL`,
  );
  // `feed_seq > @from` implies the indexes' `feed_seq IS NOT NULL`: test events are never read.
  // The inner read takes each row's payload size, not its payload (octet_length reads the stored
  // length); the page is cut where the payloads before a row pass @budget (FeedQuery.byteBudget),
  // the first two always, and only the kept rows' payloads are read, by id.
  const pageOf = (index: string, typeFilter: string) =>
    db.prepare<[PageParams], EventRow>(
      `SELECT ${EVENT_COLUMNS.split(', ')
        .map((column) => `e.${column}`)
        .join(', ')}
      FROM (
        SELECT id, feed_seq, row_number() OVER w AS n,
          coalesce(sum(bytes) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
        FROM (
          SELECT id, feed_seq, octet_length(payload) AS bytes FROM keyhook_events INDEXED BY ${index}
          WHERE tenant_id = @tenantId${typeFilter} AND feed_seq > @from AND created_at >= @since
          ORDER BY feed_seq LIMIT ${boundLimit('@limit')}
        )
        WINDOW w AS (ORDER BY feed_seq)
      ) AS k
      JOIN keyhook_events AS e ON e.tenant_id = @tenantId AND e.id = k.id
      WHERE k.n <= 2 OR @budget IS NULL OR k.before <= @budget
      ORDER BY k.feed_seq`,
    );
  const page = pageOf('keyhook_events_feed', '');
  const pageOfType = pageOf('keyhook_events_feed_type', ' AND type = @type');
  const deliveriesOf = db.prepare<[string, string], DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM keyhook_deliveries INDEXED BY keyhook_deliveries_event
      WHERE tenant_id = ? AND event_id IN (SELECT value FROM json_each(?))
      ORDER BY event_id, webhook_id`,
  );
  return db.transaction((tenantId, query) => {
    let from = 0;
    let after: FeedPage['after'];
    if (query.after !== undefined) {
      const found = afterEvent.get(tenantId, query.after);
      if (!found) return { after: null, events: [] };
      from = found.feed_seq;
      after = toEventRecord(found);
    }
    const params = {
      tenantId,
      from,
      since: query.createdSince.getTime(),
      limit: query.limit,
      type: query.type ?? null,
      budget: query.byteBudget ?? null,
    };
    const rows = (query.type === undefined ? page : pageOfType).all(params);
    const entries = new Map<string, FeedEntry>();
    for (const row of rows) entries.set(row.id, { event: toEventRecord(row), deliveries: [] });
    if (rows.length > 0) {
      const ids = JSON.stringify(rows.map((row) => row.id));
      for (const row of deliveriesOf.all(tenantId, ids)) {
        entries.get(row.event_id)!.deliveries.push(toDeliveryRecord(row));
      }
    }
    return { after, events: [...entries.values()] };
  });
}

/** A plain (deferred) transaction: one snapshot, without the write lock. */
export function listFeedEvents(
  transaction: ReturnType<typeof prepareListFeedEvents>,
  tenantId: string,
  query: FeedQuery,
): FeedPage {
  return transaction(tenantId, query);
}
