import { createKeyhook, type Keyhook, type Logger, MemoryStore } from '@keyhook/core';
import { type ApiOperation, openApiDocument } from '@keyhook/core/http';
import { FakeClock, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/store-conformance/support';
import { afterEach, beforeEach, describe } from 'vitest';
import { TEST_CATALOG } from '../support/index.js';
import { OpenApiContract } from '../support/openapi-contract.js';
import { adminSessionCases, tenantIsolationCases } from './admin-sessions.js';
import { bodyCases } from './bodies.js';
import { contractCases } from './contract.js';
import { conventionCases, mountCases } from './conventions.js';
import { dataPlaneAuthCases, whoamiCases } from './data-plane-auth.js';
import { deliveryCases } from './delivery-routes.js';
import { endpointRateCases } from './endpoint-rate-routes.js';
import { feedRouteCases } from './feed-route.js';
import { createAndReadCases, revokeCases, rotateCases } from './key-lifecycle.js';
import { listByteBudgetCases } from './list-byte-budget.js';
import { openApiDocumentCases } from './openapi-document.js';
import { portalApiCases } from './portal-api.js';
import { rateLimitCases } from './rate-limits.js';
import { refusalBeforeBodyCases } from './refusals.js';
import { GatedMemoryStore, InsertGate, RotationGate } from './rotation-gate.js';
import { signatureSchemeCases } from './signature-scheme-routes.js';
import type { HttpSuiteAdapter, StartedServer, SuiteContext } from './suite-context.js';
import { testEventCases } from './test-event-route.js';
import { validationCases } from './validation.js';
import { webhookCases } from './webhook-routes.js';

export type { HttpSuiteAdapter, HttpSuiteApp, StartedServer } from './suite-context.js';

/** The default mount point, and one a host might choose instead (docs/decisions.md §1.1). */
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
      let extra: { server: StartedServer; keyhook: Keyhook }[] = [];

      beforeEach(async () => {
        ctx.clock = new FakeClock('2026-01-01T00:00:00.000Z');
        ctx.rotations = new RotationGate();
        ctx.inserts = new InsertGate();
        ctx.logs = [];
        ctx.keyhook = createKeyhook({
          ...TEST_CATALOG,
          store: new GatedMemoryStore(ctx.rotations, ctx.inserts),
          adminSession: { secret: TEST_ADMIN_SECRET },
          clock: ctx.clock,
          logger: recordingLogger(ctx.logs),
          // Production rules (https only, SSRF guard); development is tested in core and the reference server.
          mode: 'production',
          encryptionKey: TEST_ENCRYPTION_KEY,
        });
        ctx.document ??= suiteDocument(ctx.keyhook, prefix);
        ctx.contract ??= await OpenApiContract.of(ctx.document);
        server = await adapter.start({
          keyhook: ctx.keyhook,
          prefix,
          hostRoutes: true,
          portal: ctx.keyhook.portal.api,
        });
        ctx.baseUrl = server.baseUrl;
        ctx.serve = async (options, openapi) => {
          // The suite's catalog unless `options` brings the host's own; the host routes check theirs at setup.
          const keyhook = createKeyhook({
            ...TEST_CATALOG,
            store: new MemoryStore(),
            adminSession: { secret: TEST_ADMIN_SECRET },
            clock: ctx.clock,
            logger: recordingLogger(ctx.logs),
            mode: 'production',
            encryptionKey: TEST_ENCRYPTION_KEY,
            ...options,
          }) as Keyhook;
          const app = { keyhook, prefix, hostRoutes: true as const, portal: keyhook.portal.api };
          const started = await adapter.start(openapi === undefined ? app : { ...app, openapi });
          extra.push({ server: started, keyhook });
          return { ...ctx, keyhook, baseUrl: started.baseUrl };
        };
      });

      afterEach(async () => {
        await server?.close();
        await ctx.keyhook.close();
        for (const started of extra) {
          await started.server.close();
          await started.keyhook.close();
        }
        extra = [];
      });

      contractCases(ctx);
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
      webhookCases(ctx);
      signatureSchemeCases(ctx);
      endpointRateCases(ctx);
      deliveryCases(ctx);
      testEventCases(ctx);
      feedRouteCases(ctx);
      listByteBudgetCases(ctx);
      refusalBeforeBodyCases(ctx);
      rateLimitCases(ctx);
      openApiDocumentCases(ctx);
      portalApiCases(ctx);
    });
  }
}

/** keyhook's operations, its portal API's (mounted at `{prefix}/portal`) and the host's two guarded routes (types.ts), in one document. */
function suiteDocument(keyhook: Keyhook, prefix: string): Record<string, unknown> {
  const host = (method: 'GET' | 'POST', scope: string): ApiOperation => ({
    method,
    path: `${prefix}/host/items`,
    summary: `The host's own route, behind requireScope('${scope}')`,
    success: 200,
    auth: 'apiKey',
    scope,
    tag: 'Host',
    // The host's own parser answers a bad body; keyhook's guard runs first.
    errors: method === 'POST' ? [400, 413, 415] : [],
  });
  return openApiDocument({ title: 'HTTP suite', version: '1' }, [
    ...keyhook.operations(prefix),
    ...keyhook.portal.api.operations(`${prefix}/portal`),
    host('GET', 'items:read'),
    host('POST', 'items:write'),
  ]);
}

function recordingLogger(lines: string[]): Logger {
  const record = (level: string) => (context: object, message: string) => {
    lines.push(
      JSON.stringify({ level, message, ...context }, (_key, value) =>
        value instanceof Error ? { message: value.message, stack: value.stack } : value,
      ),
    );
  };
  return { info: record('info'), warn: record('warn'), error: record('error') };
}
