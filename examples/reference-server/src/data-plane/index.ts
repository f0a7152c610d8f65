import { randomBytes } from 'node:crypto';
import type { Clock, Logger, RandomBytes } from '@keyhook/core';
import type { FastifyPluginAsync } from 'fastify';
import type { ReferenceKeyhook } from '../catalog.js';
import { ApplyStorage } from './apply.js';
import type { StagingDb } from './db.js';
import { IdempotencyKeys } from './idempotency-keys.js';
import { type StagingJobHooks, StagingJobs } from './jobs.js';
import { migrateStaging } from './migrate.js';
import { type Staging, stagingRoutes } from './routes.js';
import { RunApi } from './run-api.js';
import { RunStorage } from './runs.js';
import { SourceApi } from './source-api.js';
import { SourceStorage } from './sources.js';

/** The system's clock and CSPRNG; the data plane's tests inject their own. */
const common: { clock: Clock; randomBytes: RandomBytes } = {
  clock: { now: () => new Date() },
  randomBytes: (size) => randomBytes(size),
};

export interface DataPlane {
  routes: FastifyPluginAsync;
  jobs: StagingJobs;
  staging: Staging;
}

/**
 * The reference data plane on `db`, as a host app embeds keyhook: its tables migrated, its
 * routes behind `requireScope`, its jobs ready to start. Every event goes through keyhook's
 * `events` inside the transaction of the state change that causes it.
 */
export async function openDataPlane(
  db: StagingDb,
  keyhook: ReferenceKeyhook,
  logger: Logger,
  options: {
    hooks?: StagingJobHooks | undefined;
    sweepMs?: number | undefined;
    staleClaimMs?: number | undefined;
  } = {},
): Promise<DataPlane> {
  await migrateStaging(db, logger);
  const sources = new SourceStorage(db, options.hooks);
  const runs = new RunStorage(db, options.hooks);
  const apply = new ApplyStorage(db, options.hooks);
  const keys = new IdempotencyKeys(db, common.clock);
  const jobs = new StagingJobs({
    runs,
    apply,
    keys,
    clock: common.clock,
    logger,
    hooks: options.hooks,
    sweepMs: options.sweepMs,
    staleClaimMs: options.staleClaimMs,
  });
  // Lists stop at the byte budget keyhook's own lists use (createKeyhook's listByteBudget).
  const listByteBudget = keyhook.listByteBudget;
  const staging: Staging = {
    sources: new SourceApi({ sources, ...common, listByteBudget }),
    runs: new RunApi({ sources, runs, apply, jobs, ...common, listByteBudget }),
    keys,
  };
  return { routes: stagingRoutes(keyhook, staging), jobs, staging };
}

export type { StagingJobHooks } from './jobs.js';
export { type Operation, SCOPES, type Scope, scopeFor } from './operation-scopes.js';
export { DATA_PLANE_ROUTES, type DataPlaneRoute } from './routes.js';
