import type { CompleteStore } from '@keyhook/core/store';
import { T0 } from '@keyhook/store-conformance';
import { waitUntil } from '@keyhook/store-conformance/support';

/**
 * Events as a store from before the events feed wrote them: ids that sort against their age,
 * `[tenantId, id, seconds after T0]`. The feed's migrations (SQLite 0014, Postgres 0015) give
 * them places by age, then tenant and id.
 */
export const EVENTS_BEFORE_THE_FEED = [
  ['tenant_a', 'evt_z', 2],
  ['tenant_a', 'evt_b', 1],
  ['tenant_b', 'evt_a', 1],
  ['tenant_a', 'evt_a', 1],
] as const;

/**
 * After the feed's migration over EVENTS_BEFORE_THE_FEED: publishes one new event of tenant_a,
 * then reads each tenant's feed, as ids. The backfill is right when tenant_a reads
 * evt_a, evt_b, evt_z, then the new one, and tenant_b reads only its own.
 */
export async function feedAfterBackfill(
  store: CompleteStore,
): Promise<{ published: string; tenantA: string[]; tenantB: string[] }> {
  const outcome = await store.publishEvent(
    {
      id: 'evt_0_new',
      tenantId: 'tenant_a',
      type: 'run.completed',
      payload: '{}',
      createdAt: T0,
      traceContext: null,
    },
    () => 'dlv_1',
  );
  const ids = async (tenantId: string) =>
    (await store.listFeedEvents(tenantId, { limit: 10, createdSince: T0 })).events.map(
      (entry) => entry.event.id,
    );
  // On Postgres the feed shows only what committed below every open transaction of the cluster:
  // another suite's transaction, open on a shared server, holds it back until it ends.
  let tenantA: string[] = [];
  await waitUntil(
    async () => {
      tenantA = await ids('tenant_a');
      return tenantA.includes('evt_0_new');
    },
    10_000,
    () => `tenant_a's feed reads ${JSON.stringify(tenantA)}`,
  ).catch(() => {});
  return { published: outcome.outcome, tenantA, tenantB: await ids('tenant_b') };
}

/** What feedAfterBackfill reads when the feed's migration placed the older events right. */
export const BACKFILLED_FEED = {
  published: 'published',
  tenantA: ['evt_a', 'evt_b', 'evt_z', 'evt_0_new'],
  tenantB: ['evt_a'],
};
