import { type Clock, KeyhookError, type RandomBytes } from '@keyhook/core';
import {
  newId,
  pageOf,
  parseListCursor,
  parseListLimit,
  parseOrThrow,
  validationFailed,
} from '@keyhook/core/http';
import type { ApplyOutcome, ApplyStorage } from './apply.js';
import { StagingError } from './errors.js';
import type { RequestKey } from './idempotency-keys.js';
import type { StagingJobs } from './jobs.js';
import type { Change } from './model.js';

import { isRunId, isSourceId, refuseSource, runNotFound, sourceNotFound } from './refusals.js';
import type { RunStorage, StartOutcome } from './runs.js';
import { changeFilterSchema, ITEM_KEY, runStartSchema } from './schemas.js';
import type { SourceStorage } from './sources.js';
import { changeView, generationView, runView } from './views.js';

/**
 * Runs, their apply and the generations (data-plane.md §4.3, §4.5) as a host app writes them:
 * the rules here, storage in runs.ts and apply.ts, the jobs in jobs.ts, HTTP in routes.ts.
 */
export class RunApi {
  constructor(
    private readonly deps: {
      sources: SourceStorage;
      runs: RunStorage;
      apply: ApplyStorage;
      jobs: StagingJobs;
      clock: Clock;
      randomBytes: RandomBytes;
      /** A list page's byte budget (data-plane.md §3.3): keyhook's `listByteBudget`. */
      listByteBudget: number;
    },
  ) {}

  /**
   * POST a run: 202; discovery runs as a job. A conflicting base is the run's own outcome. With
   * `key`, the key and its answer commit with the run (data-plane.md §3.4).
   */
  async startRun(tenantId: string, sourceId: string, body: unknown, key?: RequestKey) {
    const input = parseOrThrow(runStartSchema, body ?? {});
    if (!isSourceId(sourceId)) throw sourceNotFound();
    const runId = newId('run', this.deps.clock, this.deps.randomBytes);
    const outcome: StartOutcome = await this.deps.runs.start(
      tenantId,
      sourceId,
      runId,
      input.expectedBaseGeneration,
      this.deps.clock.now(),
      key?.write(started),
    );
    const answer = started(outcome);
    if (answer.run.status === 'queued') this.deps.jobs.kick();
    return answer;
  }

  async listRuns(tenantId: string, sourceId: string, query: URLSearchParams) {
    await this.source(tenantId, sourceId);
    const limit = parseListLimit(query.get('limit'));
    const before = parseListCursor(query.get('cursor'), isRunId);
    const rows = await this.deps.runs.list(tenantId, sourceId, limit + 1, before);
    return pageOf(rows, limit, runView, (run) => run.id, this.deps.listByteBudget);
  }

  async getRun(tenantId: string, sourceId: string, runId: string) {
    return { run: runView(await this.run(tenantId, sourceId, runId)) };
  }

  /** The run's diff, in key order, paged; `?change=` keeps one kind. */
  async runDiff(tenantId: string, sourceId: string, runId: string, query: URLSearchParams) {
    const run = await this.run(tenantId, sourceId, runId);
    const rawChange = query.get('change');
    const change: Change | undefined = rawChange === null ? undefined : parseChange(rawChange);
    const limit = parseListLimit(query.get('limit'));
    const after = parseListCursor(query.get('cursor'), (key) => ITEM_KEY.test(key));
    const rows = await this.deps.runs.changes(tenantId, run.id, change, limit + 1, after);
    return { run: runView(run), ...pageOf(rows, limit, changeView, (c) => c.key, this.deps.listByteBudget) };
  }

  /**
   * POST apply: 202 while the generation is built, or the refusal (data-plane.md §4.5). With
   * `key`, the key and its answer commit with the apply's decision.
   */
  async applyRun(tenantId: string, sourceId: string, runId: string, key?: RequestKey) {
    if (!isSourceId(sourceId) || !isRunId(runId)) throw runNotFound();
    const outcome: ApplyOutcome = await this.deps.apply.requestApply(
      tenantId,
      sourceId,
      runId,
      this.deps.clock.now(),
      key?.write(applied),
    );
    const answer = applied(outcome);
    if (outcome.outcome === 'applying') this.deps.jobs.kick();
    return answer;
  }

  // --- generations ---

  async activeGeneration(tenantId: string, sourceId: string) {
    const source = await this.source(tenantId, sourceId);
    const generation =
      source.activeGeneration === 0
        ? undefined
        : await this.deps.apply.generation(tenantId, sourceId, source.activeGeneration);
    if (!generation) throw new KeyhookError('not_found', 'The source has no active generation yet.');
    return { generation: generationView(generation, source.activeGeneration) };
  }

  async listGenerations(tenantId: string, sourceId: string, query: URLSearchParams) {
    const source = await this.source(tenantId, sourceId);
    const limit = parseListLimit(query.get('limit'));
    const below = parseListCursor(query.get('cursor'), (n) => /^[1-9][0-9]{0,15}$/.test(n));
    const rows = await this.deps.apply.generations(
      tenantId,
      sourceId,
      limit + 1,
      below === undefined ? undefined : Number(below),
    );
    return pageOf(
      rows,
      limit,
      (g) => generationView(g, source.activeGeneration),
      (g) => String(g.number),
      this.deps.listByteBudget,
    );
  }

  private async source(tenantId: string, sourceId: string) {
    const source = isSourceId(sourceId) ? await this.deps.sources.get(tenantId, sourceId) : undefined;
    if (!source) throw sourceNotFound();
    return source;
  }

  private async run(tenantId: string, sourceId: string, runId: string) {
    const run =
      isSourceId(sourceId) && isRunId(runId)
        ? await this.deps.runs.get(tenantId, sourceId, runId)
        : undefined;
    if (!run) throw runNotFound();
    return run;
  }
}

function parseChange(raw: string): Change {
  const parsed = changeFilterSchema.safeParse(raw);
  if (!parsed.success) {
    throw validationFailed([{ path: 'change', message: 'must be added, updated, removed or unchanged' }]);
  }
  return parsed.data;
}

/** A start's answer: the run, or the source's refusal. The key stores it, and the API answers with it. */
function started(outcome: StartOutcome) {
  refuseSource(outcome);
  if (outcome.outcome !== 'started') throw new Error('unreachable');
  return { run: runView(outcome.run) };
}

/** An apply's answer: the run, or the refusal (data-plane.md §3.2, §4.4). */
function applied(outcome: ApplyOutcome) {
  refuseSource(outcome);
  switch (outcome.outcome) {
    case 'run_not_found':
      throw runNotFound();
    case 'conflict':
      throw new StagingError(
        'run_conflict',
        outcome.run.reason ?? 'The run conflicts with the active generation.',
        [{ message: outcome.run.reason ?? 'conflict', runId: outcome.run.id }],
      );
    case 'not_ready':
      throw new StagingError(
        'run_not_ready',
        `The run is ${outcome.run.status}; only a completed run can be applied.`,
        [{ message: `status ${outcome.run.status}`, runId: outcome.run.id, status: outcome.run.status }],
      );
    case 'apply_in_progress':
      throw new StagingError(
        'apply_in_progress',
        `The apply of ${outcome.holder} is in flight on this source.`,
        [{ message: 'one apply per source at a time', runId: outcome.holder }],
      );
    case 'applying':
    case 'noop':
      return { run: runView(outcome.run) };
    default:
      throw new Error('unreachable');
  }
}
