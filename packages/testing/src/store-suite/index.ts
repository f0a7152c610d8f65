import type { CompleteStore } from '@keyhook/core/store';
import { afterEach, beforeEach, describe } from 'vitest';
import { changeVersionCases } from './change-version.js';
import { deliveryCases } from './delivery-cases.js';
import { endpointRateCases } from './endpoint-rates.js';
import { eventsFeedCases } from './events-feed.js';
import { idempotencyCases } from './idempotency.js';
import { keyCases } from './keys.js';
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

export type { StoreHarness } from './store-harness.js';

/**
 * The one conformance suite. It runs unchanged against every store; a store that would
 * need a case skipped is a store with a bug.
 */
export function runStoreConformance(harness: StoreHarness): void {
  describe(`Store conformance: ${harness.name}`, () => {
    const context = {} as SuiteContext;
    const opened: CompleteStore[] = [];

    beforeEach(async () => {
      // Harness functions get the store they created, even while a case wraps context.store.
      const created = await harness.create();
      context.store = created;
      opened.push(created);
      context.peer = async () => {
        const peer = await harness.createPeer(created);
        if (peer !== created) opened.push(peer);
        return peer;
      };
      context.readKeyRow = (id) => harness.readKeyRow(created, id);
      context.settleFeed = async () => harness.settleFeed?.(created);
    });

    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close().catch(() => {});
    });

    keyCases(context);
    lifecycleCases(context, harness);
    restartCases(context, harness);
    rotationOverlapCases(context);
    timingCases(context);
    changeVersionCases(context, harness);
    webhookCases(context);
    idempotencyCases(context);
    deliveryCases(context, harness);
    recoveryCases(context);
    recentAttemptCases(context);
    portalSessionCases(context);
    testEventCases(context);
    eventsFeedCases(context);
    endpointRateCases(context);
    migrationRefusalCases(context, harness);
  });
}
