import type { FeedPageView } from '@keyhook/core';
import type { WebhookEvent } from '@keyhook/webhook-verify';
import type { SeenEventIds } from './receiver.js';

export interface CatchUpOptions {
  /** Where the sender mounts keyhook's routes: `http://127.0.0.1:3000/api/v1`. */
  apiUrl: string;
  /** A data-plane API key of the receiver's tenant, with the feed's scope (`events:read`). */
  apiKey: string;
  /**
   * The id of the last event this receiver took from the feed (kept where its work is kept), or
   * undefined: from the oldest event the feed holds. Not the id of a live delivery: the feed's
   * order is commit order, and a live event can come before others that commit ahead of it.
   */
  after?: string | undefined;
  /** The ids already taken: the live receiver's, so each event is handled once. */
  seen: SeenEventIds;
  /** The same work the live receiver does. */
  handle: (event: WebhookEvent) => Promise<void> | void;
  /** Events per page, 1–100. Default 100. */
  limit?: number;
}

export interface CaughtUp {
  /** The feed's last id: pass it as `after` next time. */
  after: string | undefined;
  /** Events handled; the others had been taken already. */
  handled: number;
  /** The feed answered 410 feed_expired: `after` was older than it keeps, so it began again from its oldest. */
  restarted: boolean;
}

/**
 * Catches up with the sender's events feed (`GET /events`, docs/http-api.md §4.8): page after
 * `after` until `hasMore` is false, handling each event not taken yet. Start the live receiver
 * first: an event delivered meanwhile is then taken once, by whichever sees it first.
 */
export async function catchUp(options: CatchUpOptions): Promise<CaughtUp> {
  let after = options.after;
  let handled = 0;
  let restarted = false;
  for (;;) {
    const url = new URL(`${options.apiUrl}/events`);
    url.searchParams.set('limit', String(options.limit ?? 100));
    if (after !== undefined) url.searchParams.set('after', after);
    const response = await fetch(url, { headers: { authorization: `Bearer ${options.apiKey}` } });
    if (response.status === 410 && !restarted) {
      // Events after ours may be gone: start again from the oldest; the seen ids drop repeats.
      after = undefined;
      restarted = true;
      continue;
    }
    if (!response.ok) throw new Error(`GET /events answered ${response.status}: ${await response.text()}`);
    const page = (await response.json()) as FeedPageView;
    for (const { id, type, createdAt, data } of page.data) {
      if (!options.seen.add(id)) continue;
      await options.handle({ id, type, createdAt, data });
      handled++;
    }
    after = page.data.at(-1)?.id ?? after;
    if (!page.hasMore) return { after, handled, restarted };
  }
}
