import { passagesOf } from './chunk.js';
import type { StagingDb, Tx } from './db.js';
import { applyFailed, generationPublished, runConflicted } from './events.js';
import type { GenerationRecord, RunRecord } from './model.js';
import { type GenerationRow, insertMany, type RunRow, toGeneration, toRun } from './rows.js';
import { endClaim } from './runs.js';
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

/**
 * Applying runs and the generations they publish (DESIGN.md §7 "Apply", "Generations",
 * "Activation"). Each state change commits in one transaction with the event it causes.
 */
export class ApplyStorage {
  constructor(private readonly db: StagingDb) {}

  /**
   * The apply request (DESIGN.md §7 "Apply"): the run must have completed discovery on an
   * active source. A stale base conflicts the run (`run.conflict`); another run's apply on the
   * source refuses this one; a no-op run is applied at once, publishing nothing; otherwise the
   * run takes the source's apply slot (one at a time) and a job builds its generation.
   */
  async requestApply(tenantId: string, sourceId: string, runId: string, at: Date): Promise<ApplyOutcome> {
    return this.db.transaction(async (tx): Promise<ApplyOutcome> => {
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
        await tx.run('DELETE FROM staging_run_items WHERE run_id = ?', [run.id]);
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
        await tx.run('DELETE FROM staging_run_items WHERE run_id = ?', [run.id]);
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
    });
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
   * run is applied and `generation.published` goes out, all in one transaction. `beforeSwitch`
   * runs after the build, inside it: a throw there (an injected failure) leaves nothing written.
   */
  async publishGeneration(
    run: RunRecord,
    claimedAt: Date,
    at: Date,
    beforeSwitch: (run: RunRecord) => void | Promise<void>,
  ): Promise<RunRecord | undefined> {
    const number = run.baseGeneration + 1;
    return this.db.transaction(async (tx) => {
      const held = await tx.get<RunRow>(
        `SELECT * FROM staging_runs WHERE id = ? AND status = 'applying' AND claimed_at = ?`,
        [run.id, claimedAt.getTime()],
      );
      if (!held) return undefined;
      await tx.run(
        `INSERT INTO staging_generation_items (source_id, generation, key, content_hash)
         SELECT ?, ?, key, content_hash FROM staging_run_items WHERE run_id = ?`,
        [run.sourceId, number, run.id],
      );
      const items = await tx.all<{ key: string; title: string | null; content: string }>(
        `SELECT r.key, b.title, b.content FROM staging_run_items AS r
         JOIN staging_blobs AS b ON b.tenant_id = ? AND b.hash = r.content_hash
         WHERE r.run_id = ? ORDER BY r.key`,
        [run.tenantId, run.id],
      );
      const passages = items.flatMap((item) =>
        passagesOf(item.title, item.content).map((text, seq) => [run.sourceId, number, item.key, seq, text]),
      );
      await insertMany(tx, 'staging_passages', ['source_id', 'generation', 'key', 'seq', 'text'], passages);
      await tx.run(
        `INSERT INTO staging_generations (source_id, number, tenant_id, run_id, item_count, passage_count, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        [run.sourceId, number, run.tenantId, run.id, items.length, passages.length, at.getTime()],
      );
      await beforeSwitch(run);
      const switched = await tx.run(
        `UPDATE staging_sources SET active_generation = ?, applying_run_id = NULL, updated_at = ?
         WHERE id = ? AND active_generation = ? AND applying_run_id = ?`,
        [number, at.getTime(), run.sourceId, run.baseGeneration, run.id],
      );
      // Unreachable while the apply slot is held; never switch from a base that moved.
      if (switched !== 1) throw new Error(`the active generation of ${run.sourceId} moved during the apply`);
      const applied = toRun(
        (await tx.get<RunRow>(
          `UPDATE staging_runs SET status = 'applied', generation = ?, claimed_at = NULL, updated_at = ?
           WHERE id = ? RETURNING *`,
          [number, at.getTime(), run.id],
        ))!,
      );
      await this.releaseContent(tx, run);
      await tx.publish(
        generationPublished(applied, number, { items: items.length, passages: passages.length }),
      );
      return applied;
    });
  }

  /** The build failed: the run is apply_failed (`apply.failed`) and the slot freed; the active generation is untouched. */
  async failApply(run: RunRecord, claimedAt: Date, reason: string, at: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if (!(await endClaim(tx, run, claimedAt, { from: 'applying', to: 'apply_failed', reason, at })))
        return false;
      await tx.run(
        'UPDATE staging_sources SET applying_run_id = NULL, updated_at = ? WHERE id = ? AND applying_run_id = ?',
        [at.getTime(), run.sourceId, run.id],
      );
      await this.releaseContent(tx, run);
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
   * A finished apply no longer needs its pinned set; content no staged item, pinned set or
   * generation refers to any more is dropped (the tenant's own, in the same transaction).
   */
  private async releaseContent(tx: Tx, run: RunRecord): Promise<void> {
    await tx.run('DELETE FROM staging_run_items WHERE run_id = ?', [run.id]);
    await tx.run(
      `DELETE FROM staging_blobs WHERE tenant_id = ?
         AND NOT EXISTS (SELECT 1 FROM staging_items AS i WHERE i.tenant_id = staging_blobs.tenant_id AND i.content_hash = staging_blobs.hash)
         AND NOT EXISTS (SELECT 1 FROM staging_run_items AS r JOIN staging_runs AS s ON s.id = r.run_id
                         WHERE s.tenant_id = staging_blobs.tenant_id AND r.content_hash = staging_blobs.hash)
         AND NOT EXISTS (SELECT 1 FROM staging_generation_items AS g JOIN staging_sources AS o ON o.id = g.source_id
                         WHERE o.tenant_id = staging_blobs.tenant_id AND g.content_hash = staging_blobs.hash)`,
      [run.tenantId],
    );
  }
}
