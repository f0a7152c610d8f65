import type { StagingDb, Tx } from './db.js';
import { countChanges, isNoop, type KeyedHash } from './diff.js';
import { runCompleted, runConflicted, runFailed } from './events.js';
import type { Change, ChangeRecord, RunRecord } from './model.js';
import { type ChangeRow, insertMany, type RunRow, toChange, toRun } from './rows.js';
import { lockSource, type SourceRefusal } from './sources.js';

export type StartOutcome = SourceRefusal | { outcome: 'started'; run: RunRecord };

/** What a job needs to do next: discover a run, or build its generation. */
export interface PendingRun {
  id: string;
  status: 'queued' | 'running' | 'applying';
  claimedAt: number | null;
}

const RUN = 'SELECT * FROM staging_runs WHERE tenant_id = ? AND source_id = ? AND id = ?';

/**
 * Runs and their discovery (DESIGN.md §7 "Runs", "Conflicting base"); apply.ts holds the apply.
 * Each state change commits in one transaction with the event it causes.
 */
export class RunStorage {
  constructor(private readonly db: StagingDb) {}

  /**
   * Starts a run on the staged set as it is now: the run pins the source's staged revision and
   * a copy of its (key, hash) pairs, so later item writes do not change what it discovers. It
   * conflicts at once when `expectedBaseGeneration` is not the active generation, or when an
   * apply holds the source.
   */
  async start(
    tenantId: string,
    sourceId: string,
    runId: string,
    expectedBaseGeneration: number | undefined,
    at: Date,
  ): Promise<StartOutcome> {
    return this.db.transaction(async (tx): Promise<StartOutcome> => {
      const source = await lockSource(tx, this.db, tenantId, sourceId);
      if (!source) return { outcome: 'source_not_found' };
      if (source.status !== 'active') return { outcome: 'source_inactive' };
      const reason =
        expectedBaseGeneration !== undefined && expectedBaseGeneration !== source.activeGeneration
          ? `expectedBaseGeneration is ${expectedBaseGeneration}; the active generation is ${source.activeGeneration}`
          : source.applyingRunId !== null
            ? `the apply of ${source.applyingRunId} is in flight on this source`
            : null;
      const row = await tx.get<RunRow>(
        `INSERT INTO staging_runs (id, tenant_id, source_id, status, base_generation, staged_revision,
           reason, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
        [
          runId,
          tenantId,
          sourceId,
          reason === null ? 'queued' : 'conflict',
          source.activeGeneration,
          source.stagedRevision,
          reason,
          at.getTime(),
          at.getTime(),
        ],
      );
      const run = toRun(row!);
      if (reason === null) {
        await tx.run(
          `INSERT INTO staging_run_items (run_id, key, content_hash)
           SELECT ?, key, content_hash FROM staging_items WHERE tenant_id = ? AND source_id = ?`,
          [runId, tenantId, sourceId],
        );
      } else {
        await tx.publish(runConflicted(run, source.activeGeneration, reason));
      }
      return { outcome: 'started', run };
    });
  }

  async get(tenantId: string, sourceId: string, runId: string): Promise<RunRecord | undefined> {
    const row = await this.db.read((tx) => tx.get<RunRow>(RUN, [tenantId, sourceId, runId]));
    return row ? toRun(row) : undefined;
  }

  /** Newest first; `before` is the last id of the previous page. */
  async list(tenantId: string, sourceId: string, limit: number, before?: string): Promise<RunRecord[]> {
    const select = 'SELECT * FROM staging_runs WHERE tenant_id = ? AND source_id = ?';
    const rows = await this.db.read((tx) =>
      before === undefined
        ? tx.all<RunRow>(`${select} ORDER BY id DESC LIMIT ?`, [tenantId, sourceId, limit])
        : tx.all<RunRow>(`${select} AND id < ? ORDER BY id DESC LIMIT ?`, [
            tenantId,
            sourceId,
            before,
            limit,
          ]),
    );
    return rows.map(toRun);
  }

  /** The run's diff in key order, optionally of one kind of change; `after` is the last key of the previous page. */
  async changes(
    tenantId: string,
    runId: string,
    change: Change | undefined,
    limit: number,
    after?: string,
  ): Promise<ChangeRecord[]> {
    const select = `SELECT c.* FROM staging_run_changes AS c
      JOIN staging_runs AS r ON r.id = c.run_id AND r.tenant_id = ?
      WHERE c.run_id = ? AND c.key > ?`;
    const rows = await this.db.read((tx) =>
      change === undefined
        ? tx.all<ChangeRow>(`${select} ORDER BY c.key LIMIT ?`, [tenantId, runId, after ?? '', limit])
        : tx.all<ChangeRow>(`${select} AND c.change = ? ORDER BY c.key LIMIT ?`, [
            tenantId,
            runId,
            after ?? '',
            change,
            limit,
          ]),
    );
    return rows.map(toChange);
  }

  // --- discovery (a job) ---

  /** Runs waiting for a job, and jobs whose worker may have died (their claim is older than `staleBefore`). */
  async pending(): Promise<PendingRun[]> {
    const rows = await this.db.read((tx) =>
      tx.all<{ id: string; status: PendingRun['status']; claimed_at: number | null }>(
        `SELECT id, status, claimed_at FROM staging_runs WHERE status IN ('queued', 'running', 'applying') ORDER BY id`,
      ),
    );
    return rows.map((row) => ({
      id: row.id,
      status: row.status,
      claimedAt: row.claimed_at === null ? null : Number(row.claimed_at),
    }));
  }

  /**
   * Takes a queued run for discovery (or a running one whose claim went stale): exactly one
   * caller gets it. Returns the run, or undefined when another job has it.
   */
  async claimDiscovery(runId: string, at: Date, staleBefore: Date): Promise<RunRecord | undefined> {
    const row = await this.db.transaction((tx) =>
      tx.get<RunRow>(
        `UPDATE staging_runs SET status = 'running', claimed_at = ?, updated_at = ?
         WHERE id = ? AND (status = 'queued' OR (status = 'running' AND claimed_at < ?)) RETURNING *`,
        [at.getTime(), at.getTime(), runId, staleBefore.getTime()],
      ),
    );
    return row ? toRun(row) : undefined;
  }

  /** The pinned set and the base generation's, as (key, hash) pairs: what discovery diffs. */
  async discoveryInput(run: RunRecord): Promise<{ pinned: KeyedHash[]; base: KeyedHash[] }> {
    return this.db.read(async (tx) => ({
      pinned: await keyedHashes(tx, 'SELECT key, content_hash FROM staging_run_items WHERE run_id = ?', [
        run.id,
      ]),
      base: await keyedHashes(
        tx,
        'SELECT key, content_hash FROM staging_generation_items WHERE source_id = ? AND generation = ?',
        [run.sourceId, run.baseGeneration],
      ),
    }));
  }

  /** Records the diff and completes the run (`run.completed`), if this job's claim still holds it. */
  async completeDiscovery(
    run: RunRecord,
    claimedAt: Date,
    changes: ChangeRecord[],
    at: Date,
  ): Promise<boolean> {
    const counts = countChanges(changes);
    const noop = isNoop(counts);
    return this.db.transaction(async (tx) => {
      const updated = await tx.run(
        `UPDATE staging_runs SET status = 'completed', added = ?, updated = ?, removed = ?, unchanged = ?,
           noop = ?, claimed_at = NULL, updated_at = ?
         WHERE id = ? AND status = 'running' AND claimed_at = ?`,
        [
          counts.added,
          counts.updated,
          counts.removed,
          counts.unchanged,
          noop ? 1 : 0,
          at.getTime(),
          run.id,
          claimedAt.getTime(),
        ],
      );
      if (updated === 0) return false;
      await insertMany(
        tx,
        'staging_run_changes',
        ['run_id', 'key', 'change', 'content_hash', 'previous_hash'],
        changes.map((c) => [run.id, c.key, c.change, c.contentHash, c.previousHash]),
      );
      await tx.publish(runCompleted(run, counts, noop));
      return true;
    });
  }

  /** Fails the run (`run.failed`), if this job's claim still holds it. */
  async failDiscovery(run: RunRecord, claimedAt: Date, reason: string, at: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if (!(await endClaim(tx, run, claimedAt, { from: 'running', to: 'failed', reason, at }))) return false;
      await tx.publish(runFailed(run, reason));
      return true;
    });
  }
}

async function keyedHashes(tx: Tx, sql: string, params: (string | number)[]): Promise<KeyedHash[]> {
  const rows = await tx.all<{ key: string; content_hash: string }>(sql, params);
  return rows.map((row) => ({ key: row.key, contentHash: row.content_hash }));
}

/**
 * Ends a job's claim on a run that failed (`from` → `to`, with the reason), only while that
 * claim still holds it, and drops the run's pinned set. False when another job took the run.
 */
export async function endClaim(
  tx: Tx,
  run: RunRecord,
  claimedAt: Date,
  change: { from: 'running' | 'applying'; to: 'failed' | 'apply_failed'; reason: string; at: Date },
): Promise<boolean> {
  const updated = await tx.run(
    `UPDATE staging_runs SET status = ?, reason = ?, claimed_at = NULL, updated_at = ?
     WHERE id = ? AND status = ? AND claimed_at = ?`,
    [change.to, change.reason, change.at.getTime(), run.id, change.from, claimedAt.getTime()],
  );
  if (updated === 0) return false;
  await tx.run('DELETE FROM staging_run_items WHERE run_id = ?', [run.id]);
  return true;
}
