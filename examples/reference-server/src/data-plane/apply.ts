import { passagesOf } from './chunk.js';
import { CHUNK_ROWS, type StagingDb, type Tx, yieldToEventLoop } from './db.js';
import { applyFailed, generationPublished, runConflicted } from './events.js';
import type { KeyedWrite } from './idempotency-keys.js';
import type { JobClaim, StagingJobHooks } from './jobs.js';
import type { GenerationRecord, RunRecord } from './model.js';
import { type GenerationRow, insertMany, type RunRow, toGeneration, toRun } from './rows.js';
import { dropRunItems, endClaim, renewClaim } from './runs.js';
import { lockSource, type SourceRefusal } from './sources.js';

export type ApplyOutcome =
  | SourceRefusal
  | { outcome: 'run_not_found' }
  | { outcome: 'applying'; run: RunRecord }
  /** A no-op run: marked applied at once, publishing nothing. */
  | { outcome: 'noop'; run: RunRecord }
  | { outcome: 'conflict'; run: RunRecord }
  | { outcome: 'not_ready'; run: RunRecord }
  | { outcome: 'apply_in_progress'; run: RunRecord; holder: string };

const RUN = 'SELECT * FROM staging_runs WHERE tenant_id = ? AND source_id = ? AND id = ?';

/** One chunk of pruneContent: the tenant's blobs in (after, last] that nothing refers to. */
const PRUNE_BLOBS = `DELETE FROM staging_blobs WHERE tenant_id = ? AND hash > ? AND hash <= ?
  AND NOT EXISTS (SELECT 1 FROM staging_items AS i WHERE i.tenant_id = staging_blobs.tenant_id AND i.content_hash = staging_blobs.hash)
  AND NOT EXISTS (SELECT 1 FROM staging_run_items AS r JOIN staging_runs AS s ON s.id = r.run_id
                  WHERE s.tenant_id = staging_blobs.tenant_id AND r.content_hash = staging_blobs.hash)
  AND NOT EXISTS (SELECT 1 FROM staging_generation_items AS g JOIN staging_sources AS o ON o.id = g.source_id
                  WHERE o.tenant_id = staging_blobs.tenant_id AND g.content_hash = staging_blobs.hash)`;

/**
 * PRUNE_BLOBS on Postgres: the same rows, with each reference looked up by its hash first (the
 * `_content` indexes, once per blob) and only then checked for the tenant (a primary-key lookup
 * of its source or run). Left to the planner, the joins could start from the tenant's sources
 * instead, and read every generation item of each for every blob: so it planned them on tables
 * not analyzed yet, 0.6–0.8 s a chunk on a few thousand rows, and growing with every generation
 * the tenant keeps. `OFFSET 0` keeps each lookup a subquery run per blob, and the tenant check
 * is a scalar subquery, never a join the planner could reorder, whatever the statistics say.
 */
const PRUNE_BLOBS_POSTGRES = `DELETE FROM staging_blobs WHERE tenant_id = ? AND hash > ? AND hash <= ?
  AND NOT EXISTS (SELECT 1 FROM staging_items AS i WHERE i.tenant_id = staging_blobs.tenant_id AND i.content_hash = staging_blobs.hash)
  AND NOT EXISTS (SELECT 1 FROM staging_run_items AS r WHERE r.content_hash = staging_blobs.hash
                  AND (SELECT s.tenant_id FROM staging_runs AS s WHERE s.id = r.run_id) = staging_blobs.tenant_id OFFSET 0)
  AND NOT EXISTS (SELECT 1 FROM staging_generation_items AS g WHERE g.content_hash = staging_blobs.hash
                  AND (SELECT o.tenant_id FROM staging_sources AS o WHERE o.id = g.source_id) = staging_blobs.tenant_id OFFSET 0)`;

/**
 * Applying runs and the generations they publish (data-plane.md §4.5).
 * Each state change commits in one transaction with the event it causes.
 */
export class ApplyStorage {
  constructor(
    private readonly db: StagingDb,
    private readonly hooks?: StagingJobHooks | undefined,
  ) {}

  /**
   * The apply request (data-plane.md §4.5): the run must have completed discovery on an
   * active source. A stale base conflicts the run (`run.conflict`); another run's apply on the
   * source refuses this one; a no-op run is applied at once, publishing nothing; otherwise the
   * run takes the source's apply slot (one at a time) and a job builds its generation. With
   * `keyed`, the request's Idempotency-Key and its answer commit in the same transaction.
   */
  async requestApply(
    tenantId: string,
    sourceId: string,
    runId: string,
    at: Date,
    keyed?: KeyedWrite<ApplyOutcome>,
  ): Promise<ApplyOutcome> {
    const outcome = await this.db.transaction(async (tx) => {
      const decided = await this.decideApply(tx, tenantId, sourceId, runId, at);
      await keyed?.settle(tx, decided);
      return decided;
    });
    // A conflicted or no-op run's pinned set is no longer needed: dropped after the commit, in
    // chunks. The answer is for what committed: a clean-up that fails leaves only rows nothing reads.
    if (outcome.outcome === 'conflict' || outcome.outcome === 'noop')
      await dropRunItems(this.db, runId).catch(() => {});
    return outcome;
  }

  /** requestApply's decision, and its writes, in the caller's transaction. */
  private async decideApply(
    tx: Tx,
    tenantId: string,
    sourceId: string,
    runId: string,
    at: Date,
  ): Promise<ApplyOutcome> {
    const source = await lockSource(tx, this.db, tenantId, sourceId);
    if (!source) return { outcome: 'source_not_found' };
    const row = await tx.get<RunRow>(RUN, [tenantId, sourceId, runId]);
    if (!row) return { outcome: 'run_not_found' };
    const run = toRun(row);
    if (source.status !== 'active') return { outcome: 'source_inactive' };
    if (run.status === 'conflict') return { outcome: 'conflict', run };
    if (run.status !== 'completed') return { outcome: 'not_ready', run };
    if (source.activeGeneration !== run.baseGeneration) {
      const reason = `the run's base is generation ${run.baseGeneration}; generation ${source.activeGeneration} is active now`;
      const conflicted = await this.setStatus(tx, run.id, 'conflict', reason, at);
      await tx.publish(runConflicted(conflicted, source.activeGeneration, reason));
      return { outcome: 'conflict', run: conflicted };
    }
    if (source.applyingRunId !== null) {
      return { outcome: 'apply_in_progress', run, holder: source.applyingRunId };
    }
    if (run.noop) {
      const applied = toRun(
        (await tx.get<RunRow>(
          `UPDATE staging_runs SET status = 'applied', generation = ?, updated_at = ? WHERE id = ? RETURNING *`,
          [source.activeGeneration === 0 ? null : source.activeGeneration, at.getTime(), run.id],
        ))!,
      );
      return { outcome: 'noop', run: applied };
    }
    await tx.run('UPDATE staging_sources SET applying_run_id = ?, updated_at = ? WHERE id = ?', [
      run.id,
      at.getTime(),
      sourceId,
    ]);
    const applying = toRun(
      (await tx.get<RunRow>(
        `UPDATE staging_runs SET status = 'applying', claimed_at = NULL, updated_at = ? WHERE id = ? RETURNING *`,
        [at.getTime(), run.id],
      ))!,
    );
    return { outcome: 'applying', run: applying };
  }

  /** Takes an applying run for its build (or one whose build claim went stale). */
  async claimBuild(runId: string, at: Date, staleBefore: Date): Promise<RunRecord | undefined> {
    const row = await this.db.transaction((tx) =>
      tx.get<RunRow>(
        `UPDATE staging_runs SET claimed_at = ?, updated_at = ?
         WHERE id = ? AND status = 'applying' AND (claimed_at IS NULL OR claimed_at < ?) RETURNING *`,
        [at.getTime(), at.getTime(), runId, staleBefore.getTime()],
      ),
    );
    return row ? toRun(row) : undefined;
  }

  /**
   * Builds generation base + 1 from the run's pinned items, cut into passages, and switches the
   * source's active pointer to it with a compare-and-swap on (base, this run's apply slot); the
   * run is applied and `generation.published` goes out, in one final transaction. The build
   * before it runs in chunks of CHUNK_ROWS items, each a short transaction that renews this job's
   * claim on the run (renewClaim: a compare-and-swap on `claim.at`, which then moves on), yielding
   * to the event loop between them (data-plane.md §5.5): its rows are for generation N+1, which
   * no reader looks at before the final transaction writes the generation's row and moves the
   * pointer. `beforeSwitch` runs inside that transaction: a throw there (an injected failure)
   * leaves the active generation as it was, and the build's rows are dropped (here on failure, or
   * by the next build of N+1). Once it is applied, the caller releases the run's pinned set and content (releasePinnedSet,
   * pruneContent), off the job's path.
   */
  async publishGeneration(
    run: RunRecord,
    claim: JobClaim,
    at: Date,
    beforeSwitch: (run: RunRecord) => void | Promise<void>,
  ): Promise<RunRecord | undefined> {
    const number = run.baseGeneration + 1;
    // Every chunk's transaction renews the claim (a compare-and-swap on claimed_at), or stops
    // there when another job took the run; the new time is this job's once the chunk commits.
    const renew = (tx: Tx) => renewClaim(tx, run.id, 'applying', claim);
    const step = (chunk: number) =>
      this.hooks?.beforeChunk?.({ work: 'build', sourceId: run.sourceId, runId: run.id, chunk });
    // A build of N+1 that died (or failed) may have left rows: N+1 starts empty.
    await step(0);
    if (!(await this.dropGenerationRows(run, number, claim))) return undefined;
    let items = 0;
    let passages = 0;
    try {
      for (let after = '', chunk = 1; ; chunk++) {
        await step(chunk);
        const page = await this.db.read((tx) =>
          tx.all<{ key: string; content_hash: string; title: string | null; content: string | null }>(
            `SELECT r.key, r.content_hash, b.title, b.content FROM staging_run_items AS r
             LEFT JOIN staging_blobs AS b ON b.tenant_id = ? AND b.hash = r.content_hash
             WHERE r.run_id = ? AND r.key > ? ORDER BY r.key LIMIT ?`,
            [run.tenantId, run.id, after, CHUNK_ROWS],
          ),
        );
        if (page.length === 0) break;
        const pieces = page.flatMap((item) =>
          item.content === null
            ? []
            : passagesOf(item.title, item.content).map((text, seq) => [
                run.sourceId,
                number,
                item.key,
                seq,
                text,
              ]),
        );
        const renewed = await this.db.transaction(async (tx) => {
          const next = await renew(tx);
          if (next === undefined) return undefined;
          await insertMany(
            tx,
            'staging_generation_items',
            ['source_id', 'generation', 'key', 'content_hash'],
            page.map((item) => [run.sourceId, number, item.key, item.content_hash]),
          );
          await insertMany(tx, 'staging_passages', ['source_id', 'generation', 'key', 'seq', 'text'], pieces);
          return next;
        });
        if (renewed === undefined) return undefined; // another job took the run: its build starts N+1 again
        claim.at = renewed;
        items += page.length;
        passages += pieces.length;
        if (page.length < CHUNK_ROWS) break;
        after = page.at(-1)!.key;
        await yieldToEventLoop();
      }
      const applied = await this.db.transaction(async (tx) => {
        if ((await renew(tx)) === undefined) return undefined;
        await tx.run(
          `INSERT INTO staging_generations (source_id, number, tenant_id, run_id, item_count, passage_count, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?)`,
          [run.sourceId, number, run.tenantId, run.id, items, passages, at.getTime()],
        );
        await beforeSwitch(run);
        const switched = await tx.run(
          `UPDATE staging_sources SET active_generation = ?, applying_run_id = NULL, updated_at = ?
           WHERE id = ? AND active_generation = ? AND applying_run_id = ?`,
          [number, at.getTime(), run.sourceId, run.baseGeneration, run.id],
        );
        // Unreachable while the apply slot is held; never switch from a base that moved.
        if (switched !== 1)
          throw new Error(`the active generation of ${run.sourceId} moved during the apply`);
        const appliedRun = toRun(
          (await tx.get<RunRow>(
            `UPDATE staging_runs SET status = 'applied', generation = ?, claimed_at = NULL, updated_at = ?
             WHERE id = ? RETURNING *`,
            [number, at.getTime(), run.id],
          ))!,
        );
        await tx.publish(generationPublished(appliedRun, number, { items, passages }));
        return appliedRun;
      });
      return applied;
    } catch (error) {
      // Not published: generation N+1's rows are nobody's. The caller fails the apply. Only while
      // this job still holds the run: once another job took it, they are that job's rows.
      await this.dropGenerationRows(run, number, claim).catch(() => {});
      throw error;
    }
  }

  /**
   * The build failed: the run is apply_failed (`apply.failed`) and the slot freed; the active
   * generation is untouched. True if this job's claim ended the run: the caller then releases
   * its pinned set and content (releasePinnedSet, pruneContent), off the job's path.
   */
  async failApply(run: RunRecord, claim: JobClaim, reason: string, at: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if (!(await endClaim(tx, run, claim, { from: 'applying', to: 'apply_failed', reason, at })))
        return false;
      await tx.run(
        'UPDATE staging_sources SET applying_run_id = NULL, updated_at = ? WHERE id = ? AND applying_run_id = ?',
        [at.getTime(), run.sourceId, run.id],
      );
      await tx.publish(applyFailed(run, reason));
      return true;
    });
  }

  // --- generations ---

  async generations(
    tenantId: string,
    sourceId: string,
    limit: number,
    below?: number,
  ): Promise<GenerationRecord[]> {
    const rows = await this.db.read((tx) =>
      tx.all<GenerationRow>(
        `SELECT * FROM staging_generations WHERE tenant_id = ? AND source_id = ? AND number < ?
         ORDER BY number DESC LIMIT ?`,
        [tenantId, sourceId, below ?? Number.MAX_SAFE_INTEGER, limit],
      ),
    );
    return rows.map(toGeneration);
  }

  async generation(
    tenantId: string,
    sourceId: string,
    number: number,
  ): Promise<GenerationRecord | undefined> {
    const row = await this.db.read((tx) =>
      tx.get<GenerationRow>(
        'SELECT * FROM staging_generations WHERE tenant_id = ? AND source_id = ? AND number = ?',
        [tenantId, sourceId, number],
      ),
    );
    return row ? toGeneration(row) : undefined;
  }

  private async setStatus(tx: Tx, runId: string, status: RunRecord['status'], reason: string, at: Date) {
    const row = await tx.get<RunRow>(
      'UPDATE staging_runs SET status = ?, reason = ?, claimed_at = NULL, updated_at = ? WHERE id = ? RETURNING *',
      [status, reason, at.getTime(), runId],
    );
    return toRun(row!);
  }

  /**
   * A finished apply (applied or apply_failed) no longer needs its pinned set: dropped after the
   * apply's commit, in chunks with the event loop let in between. Nothing reads the pinned set
   * of a run in those states, so a failure half-way leaves only garbage. Then the tenant's
   * content nobody refers to any more goes too (pruneContent). The jobs run both in their
   * clean-up lane (StagingJobs), so no discovery or build waits for them.
   */
  async releasePinnedSet(run: RunRecord): Promise<void> {
    await dropRunItems(this.db, run.id);
  }

  /**
   * Content (blobs) no staged item, pinned set or generation refers to any more is dropped (the
   * tenant's own), in chunks with the event loop let in between: what it deletes nobody refers
   * to, so a failure half-way leaves only garbage, which the next apply's prune takes.
   */
  async pruneContent(tenantId: string): Promise<void> {
    for (let after = ''; ; ) {
      const window = await this.db.read((tx) =>
        tx.all<{ hash: string }>(
          'SELECT hash FROM staging_blobs WHERE tenant_id = ? AND hash > ? ORDER BY hash LIMIT ?',
          [tenantId, after, CHUNK_ROWS],
        ),
      );
      if (window.length === 0) return;
      const last = window.at(-1)!.hash;
      await this.db.transaction((tx) =>
        tx.run(this.db.dialect === 'postgres' ? PRUNE_BLOBS_POSTGRES : PRUNE_BLOBS, [tenantId, after, last]),
      );
      if (window.length < CHUNK_ROWS) return;
      after = last;
      await yieldToEventLoop();
    }
  }

  /**
   * Generation `number`'s item and passage rows, while no generation row names it: a chunk per
   * transaction, each renewing this job's claim on `run` first. False when another job took the
   * run: the rows are that job's build of N+1 now, and none of them is touched.
   */
  private async dropGenerationRows(run: RunRecord, number: number, claim: JobClaim): Promise<boolean> {
    for (const table of ['staging_generation_items', 'staging_passages']) {
      for (;;) {
        const step = await this.db.transaction(async (tx) => {
          const next = await renewClaim(tx, run.id, 'applying', claim);
          if (next === undefined) return undefined;
          const published = await tx.get(
            'SELECT 1 AS published FROM staging_generations WHERE source_id = ? AND number = ?',
            [run.sourceId, number],
          );
          const deleted = published
            ? 0
            : await tx.run(
                `DELETE FROM ${table} WHERE source_id = ? AND generation = ? AND key IN
                   (SELECT key FROM ${table} WHERE source_id = ? AND generation = ? ORDER BY key LIMIT ?)`,
                [run.sourceId, number, run.sourceId, number, CHUNK_ROWS],
              );
          return { next, deleted };
        });
        if (step === undefined) return false;
        claim.at = step.next;
        if (step.deleted === 0) break;
        await yieldToEventLoop();
      }
    }
    return true;
  }
}
