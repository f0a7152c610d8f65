import { type CompleteStore, OPTIONAL_CAPABILITIES, type Store } from '@keyhook/core/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { changeVersionCases } from './change-version.js';
import { deliveryCases } from './delivery-cases.js';
import { endpointRateCases } from './endpoint-rates.js';
import { eventsFeedCases } from './events-feed.js';
import { idempotencyCases } from './idempotency.js';
import { joinedTransactionCases } from './joined-transactions.js';
import { keyCases } from './key-cases.js';
import { lifecycleCases } from './lifecycle.js';
import { migrationRefusalCases } from './migration-refusals.js';
import { portalSessionCases } from './portal-sessions.js';
import { recentAttemptCases } from './recent-attempts.js';
import { recoveryCases } from './recovery.js';
import { restartCases } from './restart.js';
import { rotationOverlapCases } from './rotation-overlap.js';
import type { StoreHarness, SuiteContext } from './store-harness.js';
import { testEventCases } from './test-events.js';
import { timingCases } from './verification-timing.js';
import { webhookCases } from './webhook-cases.js';

export {
  idempotencyRecord,
  keyRecord,
  orderedIds,
  portalSessionRecord,
  sha256,
  subscriptionOf,
  T0,
  webhookRecord,
} from './fixtures.js';
export type { StoreHarness } from './store-harness.js';

/**
 * The one conformance suite, registered as Vitest cases: call it at the top of a test file. It
 * runs unchanged against every store; a store that would need a case skipped, other than those
 * of a capability it leaves out (`without`), is a store with a bug.
 */
export function runStoreConformance(harness: StoreHarness): void {
  if (Boolean(harness.joinsTransactions) !== (harness.hostTransaction !== undefined))
    throw new TypeError(
      'runStoreConformance: a harness gives `hostTransaction` exactly when `joinsTransactions` is true ' +
        '(the cases of a store that joins a transaction open one through it)',
    );
  const without = new Set(harness.without ?? []);
  describe(`Store conformance: ${harness.name}`, () => {
    const context = {} as SuiteContext;
    const opened: Store[] = [];

    beforeEach(async () => {
      // Harness functions get the store they created, even while a case wraps context.store.
      const created = await harness.create();
      // The cases of a capability the store leaves out are skipped: the rest never call it.
      context.store = created as CompleteStore;
      opened.push(created);
      context.peer = async () => {
        const peer = await harness.createPeer(created);
        if (peer !== created) opened.push(peer);
        return peer as CompleteStore;
      };
      context.readKeyRow = (id) => harness.readKeyRow(created, id);
      context.settleFeed = async () => harness.settleFeed?.(created);
    });

    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close().catch(() => {});
    });

    it('keeps each optional capability whole, or leaves it out whole as the harness says', () => {
      const store = context.store as unknown as Record<string, unknown>;
      for (const [capability, { members }] of Object.entries(OPTIONAL_CAPABILITIES)) {
        const kept = members.filter((member) => typeof store[member] === 'function');
        expect(kept, capability).toEqual(without.has(capability as never) ? [] : members);
      }
    });

    keyCases(context);
    lifecycleCases(context, harness);
    restartCases(context, harness);
    rotationOverlapCases(context);
    timingCases(context);
    changeVersionCases(context, harness);
    webhookCases(context);
    idempotencyCases(context);
    deliveryCases(context);
    joinedTransactionCases(context, harness);
    recoveryCases(context);
    recentAttemptCases(context);
    describe.skipIf(without.has('portalSessions'))('PortalSessionStore', () => portalSessionCases(context));
    testEventCases(context);
    describe.skipIf(without.has('eventFeed'))('EventFeedStore', () => eventsFeedCases(context));
    endpointRateCases(context);
    migrationRefusalCases(context, harness);
  });
}
