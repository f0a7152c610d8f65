import type { FeedEntry, FeedPage, FeedQuery } from '@keyhook/core/store';
import {
  DELIVERY_COLUMNS,
  type DeliveryRow,
  EVENT_COLUMNS,
  type EventRow,
  qualified,
  toDeliveryRecord,
  toEventRecord,
  unprefixed,
} from '../delivery-row.js';
import type { Tables } from '../statements.js';
import type { StoreContext } from '../store-context.js';

const AFTER_PREFIX = 'a_';
const EVENT_PREFIX = 'e_';
const DELIVERY_PREFIX = 'd_';

/**
 * The events feed's read (docs/decisions.md §8.17), one statement and so one snapshot: the after
 * event, the page, and each event's deliveries. $1 tenant, $2 created since, $3 limit, $4 the byte
 * budget (FeedQuery.byteBudget, or NULL), then the after id and the type as the form takes them.
 *
 * `page` reads each row's payload size, not its payload (octet_length reads a TOAST pointer's
 * size); `kept` cuts the page where the payloads before a row pass the budget, the first two
 * always; only the kept rows' payloads are read, by id.
 *
 * The page holds only rows whose writing transaction is below the snapshot's xmin: each such
 * transaction has ended, and any transaction still to commit has an id at or above it, so its rows
 * sort after every place read here. The reader pages strictly after its last place: none missed,
 * none twice. The horizon is read once for the statement (pg_current_snapshot is stable), and the
 * page is an index range on keyhook_events_feed_idx or keyhook_events_feed_type_idx (0015), tenant
 * first; the deliveries come from keyhook_deliveries_event_id_idx (0006).
 */
export function statements(t: Tables) {
  const { events, deliveries } = t;
  const text = (withAfter: boolean, withType: boolean) => {
    const typeParam = withAfter ? '$6' : '$5';
    const afterCte = withAfter
      ? `after AS MATERIALIZED (
        SELECT ${EVENT_COLUMNS}, feed_xid, feed_seq FROM ${events}
        WHERE tenant_id = $1 AND id = $5 AND feed_seq IS NOT NULL
      ),`
      : '';
    return `WITH ${afterCte}
      page AS MATERIALIZED (
        SELECT id, feed_xid, feed_seq, octet_length(payload) AS bytes FROM ${events}
        WHERE tenant_id = $1${withType ? ` AND type = ${typeParam}` : ''}
          ${withAfter ? 'AND (feed_xid, feed_seq) > ((SELECT feed_xid FROM after), (SELECT feed_seq FROM after))' : ''}
          AND feed_seq IS NOT NULL
          AND feed_xid < pg_snapshot_xmin(pg_current_snapshot())
          AND created_at >= $2
        ORDER BY feed_xid, feed_seq
        LIMIT $3
      ),
      kept AS MATERIALIZED (
        SELECT id, feed_xid, feed_seq FROM (
          SELECT id, feed_xid, feed_seq, row_number() OVER w AS n,
            coalesce(sum(bytes) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
          FROM page WINDOW w AS (ORDER BY feed_xid, feed_seq)
        ) AS sized
        WHERE n <= 2 OR $4::bigint IS NULL OR before <= $4::bigint
      )
      SELECT ${withAfter ? qualified('a', EVENT_COLUMNS, AFTER_PREFIX) : 'NULL AS a_id'},
        ${qualified('p', EVENT_COLUMNS, EVENT_PREFIX)}, ${qualified('d', DELIVERY_COLUMNS, DELIVERY_PREFIX)}
      FROM (SELECT 1) AS one
      ${withAfter ? 'LEFT JOIN after AS a ON true' : ''}
      LEFT JOIN kept AS k ON true
      LEFT JOIN ${events} AS p ON p.tenant_id = $1 AND p.id = k.id
      LEFT JOIN ${deliveries} AS d ON d.event_id = p.id AND d.tenant_id = p.tenant_id
      ORDER BY k.feed_xid, k.feed_seq, d.webhook_id`;
  };
  return {
    first: text(false, false),
    firstOfType: text(false, true),
    after: text(true, false),
    afterOfType: text(true, true),
  };
}

/** The statement and its values for one query. */
export function feedQuery(feed: FeedStatements, tenantId: string, query: FeedQuery) {
  const values: unknown[] = [tenantId, query.createdSince, query.limit, query.byteBudget ?? null];
  if (query.after !== undefined) values.push(query.after);
  if (query.type !== undefined) values.push(query.type);
  const text =
    query.after === undefined
      ? query.type === undefined
        ? feed.first
        : feed.firstOfType
      : query.type === undefined
        ? feed.after
        : feed.afterOfType;
  return { text, values };
}

/** The statement's rows as a page: one row per event and delivery, one for an event without. */
function toFeedPage(query: FeedQuery, rows: readonly Record<string, unknown>[]): FeedPage {
  let after: FeedPage['after'];
  if (query.after !== undefined) {
    const first = rows[0];
    after =
      first?.['a_id'] == null
        ? null
        : toEventRecord(unprefixed<EventRow>(first, EVENT_COLUMNS, AFTER_PREFIX));
  }
  const entries = new Map<string, FeedEntry>();
  for (const row of rows) {
    if (row['e_id'] == null) continue;
    const id = row['e_id'] as string;
    let entry = entries.get(id);
    if (!entry) {
      entry = {
        event: toEventRecord(unprefixed<EventRow>(row, EVENT_COLUMNS, EVENT_PREFIX)),
        deliveries: [],
      };
      entries.set(id, entry);
    }
    if (row['d_id'] != null) {
      entry.deliveries.push(
        toDeliveryRecord(unprefixed<DeliveryRow>(row, DELIVERY_COLUMNS, DELIVERY_PREFIX)),
      );
    }
  }
  return { after, events: [...entries.values()] };
}

/** The four forms of the feed's one statement: with or without an `after`, of one type or all. */
type FeedStatements = ReturnType<typeof statements>;

/** One statement, one snapshot, on the indexes of migration 0015 (see `statements`). */
export async function listFeedEvents(
  ctx: StoreContext,
  tenantId: string,
  query: FeedQuery,
): Promise<FeedPage> {
  const { text, values } = feedQuery(ctx.sql(statements), tenantId, query);
  return toFeedPage(query, (await ctx.query(text, values)).rows);
}
