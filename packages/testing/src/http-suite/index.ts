import { createKeyhook, silentLogger } from '@keyhook/core';
import { afterEach, beforeEach, describe } from 'vitest';
import { TEST_ADMIN_SECRET } from '../support/admin.js';
import { FakeClock } from '../support/clock.js';
import { adminSessionCases, tenantIsolationCases } from './admin-auth.js';
import { bodyCases } from './bodies.js';
import { conventionCases, mountCases } from './conventions.js';
import { dataPlaneAuthCases, whoamiCases } from './data-plane-auth.js';
import { createAndReadCases, revokeCases, rotateCases } from './key-lifecycle.js';
import { GatedMemoryStore, RotationGate } from './rotation-gate.js';
import type { HttpSuiteAdapter, StartedServer, SuiteContext } from './types.js';
import { validationCases } from './validation.js';

export type { HttpSuiteAdapter, HttpSuiteApp, StartedServer } from './types.js';

/** The default mount point, and one a host might choose instead (DESIGN.md §2 "Mount point"). */
const PREFIXES = ['/api/v1', '/developer/v2'];

/**
 * The one HTTP suite. It runs unchanged against every adapter, over real HTTP on
 * 127.0.0.1, once per mount point; an adapter that needs a case skipped has a bug.
 */
export function runHttpSuite(adapter: HttpSuiteAdapter): void {
  for (const prefix of PREFIXES) {
    describe(`HTTP suite: ${adapter.name} at ${prefix}`, () => {
      const ctx = { prefix } as SuiteContext;
      let server: StartedServer | undefined;

      beforeEach(async () => {
        ctx.clock = new FakeClock('2026-01-01T00:00:00.000Z');
        ctx.rotations = new RotationGate();
        ctx.keyhook = createKeyhook({
          store: new GatedMemoryStore(ctx.rotations),
          adminSession: { secret: TEST_ADMIN_SECRET },
          clock: ctx.clock,
          logger: silentLogger,
        });
        server = await adapter.start({ keyhook: ctx.keyhook, prefix, hostRoutes: true });
        ctx.baseUrl = server.baseUrl;
      });

      afterEach(async () => {
        await server?.close();
        await ctx.keyhook.close();
      });

      createAndReadCases(ctx);
      dataPlaneAuthCases(ctx);
      whoamiCases(ctx);
      revokeCases(ctx);
      rotateCases(ctx);
      validationCases(ctx);
      adminSessionCases(ctx);
      tenantIsolationCases(ctx);
      bodyCases(ctx);
      conventionCases(ctx);
      mountCases(ctx);
    });
  }
}
