import { z } from 'zod';
import type { EventTypeCatalog } from '../catalog/events.js';
import type { ScopeCatalog, ScopeDefinition } from '../catalog/scopes.js';
import type { Clock } from '../clock.js';
import { KeyhookError } from '../errors.js';
import { parseListLimit, withinBudget } from '../http/pagination.js';
import { idTime } from '../ids.js';
import type { DeliveryRecord, EventFeedStore, FeedEntry } from '../store/types.js';
import { validationFailed } from '../validation.js';
import { EVENT_ID_PATTERN } from './publish.js';
import { DELIVERY_STATUSES } from './states.js';
import { isTestEventId } from './test-marker.js';

/** The scope the events feed needs unless the host names one of its own (docs/decisions.md §8.17). */
export const EVENTS_FEED_SCOPE: ScopeDefinition<'events:read'> = {
  name: 'events:read',
  description: 'Read the events feed (GET /events): the events of the key’s tenant and their deliveries',
};

/**
 * `createKeyhook`'s `eventsFeed`: the scope `GET /events` needs (one of your declared scopes;
 * default `events:read`, added to your catalog), or `false` for no feed at all.
 */
export type EventsFeedOption = { scope?: string | undefined } | false;

/** What the option makes of the feed: the scope it needs, and whether that scope joins the catalog. */
export interface EventsFeedPlan {
  scope: string;
  /** The default scope, when the host did not declare it itself. */
  adds: ScopeDefinition | undefined;
}

/**
 * docs/decisions.md §8.17: no feed when turned off, or when the catalog has no event type (core
 * alone stays neutral, §3.13); a named scope must be one the host declared.
 */
export function eventsFeedPlan(
  option: EventsFeedOption | undefined,
  scopes: ScopeCatalog,
  events: EventTypeCatalog,
): EventsFeedPlan | undefined {
  if (option === false) return undefined;
  if (option !== undefined && (typeof option !== 'object' || option === null)) {
    throw new TypeError('keyhook: eventsFeed must be { scope?: string } or false');
  }
  if (events.types.length === 0) {
    if (option?.scope !== undefined) {
      throw new TypeError(
        'keyhook: eventsFeed: the feed needs at least one event type (createKeyhook({ eventCatalog }))',
      );
    }
    return undefined;
  }
  if (option?.scope !== undefined) {
    scopes.assertKnown(option.scope, 'eventsFeed.scope');
    return { scope: option.scope, adds: undefined };
  }
  const declared = scopes.has(EVENTS_FEED_SCOPE.name);
  return { scope: EVENTS_FEED_SCOPE.name, adds: declared ? undefined : EVENTS_FEED_SCOPE };
}

const instant = z.iso.datetime();

/** One event as the feed shows it: the body its deliveries carry, and where each delivery stands. */
export const feedEventViewSchema = z.object({
  id: z.string(),
  type: z.string(),
  createdAt: instant,
  data: z.record(z.string(), z.unknown()),
  deliveries: z.array(
    z.object({
      webhookId: z.string(),
      status: z.enum(DELIVERY_STATUSES),
      delivered: z.boolean().meta({ description: 'True once the endpoint answered an attempt with a 2xx.' }),
      attempts: z.number().int(),
      lastAttemptAt: instant.nullable(),
    }),
  ),
});

/** An event of the feed, as `GET /events` answers it (a receiver's catch-up reads it). */
export type FeedEventView = z.output<typeof feedEventViewSchema>;

/** `GET /events`'s answer: oldest first; `hasMore` says whether another page can be read now. */
export const feedPageSchema = z.object({
  data: z.array(feedEventViewSchema),
  hasMore: z
    .boolean()
    .meta({ description: 'True when more events follow: ask again with ?after= the last id of data.' }),
});

/** A page of the feed, `{ data, hasMore }`, as `GET /events` answers it. */
export type FeedPageView = z.output<typeof feedPageSchema>;

/** The query `GET /events` reads. */
export const FEED_QUERY = ['after', 'since', 'type', 'limit'] as const;

const sinceSchema = z.iso.datetime({ offset: true });

const deliveryOf = (delivery: DeliveryRecord): FeedEventView['deliveries'][number] => ({
  webhookId: delivery.webhookId,
  status: delivery.status,
  delivered: delivery.status === 'succeeded',
  attempts: delivery.attempts,
  lastAttemptAt: delivery.lastAttemptAt ? delivery.lastAttemptAt.toISOString() : null,
});

export function toFeedEventView({ event, deliveries }: FeedEntry): FeedEventView {
  // The payload is the wire body `{ id, type, createdAt, data }`: its data is the event's.
  const body = JSON.parse(event.payload) as { data: Record<string, unknown> };
  return {
    id: event.id,
    type: event.type,
    createdAt: event.createdAt.toISOString(),
    data: body.data,
    deliveries: deliveries.map(deliveryOf),
  };
}

export interface EventsFeedDeps {
  store: EventFeedStore;
  clock: Clock;
  catalog: EventTypeCatalog;
  /** The feed's window: what retention keeps for sure (docs/decisions.md §13). */
  retentionMs: number;
  /** A page's byte budget (docs/decisions.md §14). */
  listByteBudget: number;
}

const expired = (what: 'after' | 'since' = 'after') =>
  new KeyhookError(
    'feed_expired',
    what === 'after'
      ? 'That event is older than the feed keeps: events after it may be gone. Start again without after.'
      : 'That time is older than the feed keeps: events after it may be gone. Start again without since.',
  );

/**
 * The events feed's rules (docs/decisions.md §8.17, docs/http-api.md §4.8): the query, the
 * window, and what an `after` outside it answers. The store only reads.
 */
export class EventsFeed {
  constructor(private readonly deps: EventsFeedDeps) {}

  async read(tenantId: string, query: URLSearchParams): Promise<FeedPageView> {
    const limit = parseListLimit(query.get('limit'));
    const type = query.get('type') ?? undefined;
    if (type !== undefined && !this.deps.catalog.has(type)) {
      throw validationFailed([
        {
          path: 'type',
          message: `must be one of this API's event types: ${this.deps.catalog.types.join(', ')}`,
        },
      ]);
    }
    const after = query.get('after') ?? undefined;
    if (after !== undefined && !EVENT_ID_PATTERN.test(after)) {
      throw validationFailed([{ path: 'after', message: 'must be an event id (evt_…) the feed returned' }]);
    }
    const createdSince = new Date(this.deps.clock.now().getTime() - this.deps.retentionMs);
    const since = this.since(query.get('since') ?? undefined, after, createdSince);
    const page = await this.deps.store.listFeedEvents(tenantId, {
      after,
      type,
      limit: limit + 1,
      // From a time: the window's events created at or after it, in feed order.
      createdSince: since ?? createdSince,
      byteBudget: this.deps.listByteBudget,
    });
    if (after !== undefined) {
      // Found or not, an event from before the window may have had followers that are gone: never a silent gap.
      const createdAt = page.after ? page.after.createdAt.getTime() : idTime(after, 'evt');
      if (createdAt !== undefined && createdAt < createdSince.getTime()) throw expired();
      // Gone, an id the host chose tells no time: it may have been purged, so the reader starts again.
      // A test event's was never in the feed.
      if (!page.after) {
        if (createdAt === undefined && !isTestEventId(after)) throw expired();
        throw new KeyhookError('not_found', 'No event with that id in this feed.');
      }
    }
    const held = withinBudget(page.events, limit, this.deps.listByteBudget, toFeedEventView);
    return { data: held.data, hasMore: held.more };
  }

  /** `since` as a time: an RFC 3339 time within the window, never beside `after`. */
  private since(text: string | undefined, after: string | undefined, windowStart: Date): Date | undefined {
    if (text === undefined) return undefined;
    if (after !== undefined)
      throw validationFailed([
        { path: 'since', message: 'cannot be given with after: since starts a reading, after continues one' },
      ]);
    if (!sinceSchema.safeParse(text).success)
      throw validationFailed([
        { path: 'since', message: 'must be an RFC 3339 time, such as 2026-12-06T12:00:00Z' },
      ]);
    const since = new Date(text);
    if (since.getTime() < windowStart.getTime()) throw expired('since');
    return since;
  }
}
