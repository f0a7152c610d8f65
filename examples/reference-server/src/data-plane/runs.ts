import { CHUNK_ROWS, type SqlParam, type StagingDb, type Tx, yieldToEventLoop } from './db.js';
import { isNoop } from './diff.js';
import { runCompleted, runConflicted, runFailed } from './events.js';
import { type KeyedWrite, releaseKeyOfRun } from './idempotency-keys.js';
import type { JobClaim, StagingJobHooks } from './jobs.js';
import type { Change, ChangeCounts, ChangeRecord, RunRecord } from './model.js';
import { type ChangeRow, itemSetOf, type RunRow, toChange, toRun, toSource } from './rows.js';
import {
  BUSY_RETRY_MS,
  lockSourceRow,
  pendingFresh,
  type SourceRefusal,
  sleep,
  sweepItemSets,
} from './sources.js';

export type StartOutcome = SourceRefusal | { outcome: 'started'; run: RunRecord };

/** What a job needs to do next: discover a run, or build its generation. */
export interface PendingRun {
  id: string;
  status: 'queued' | 'running' | 'applying';
  claimedAt: number | null;
}

const RUN = 'SELECT * FROM staging_runs WHERE tenant_id = ? AND source_id = ? AND id = ?';

/**
 * Runs and their discovery (data-plane.md §4.3, §4.4); apply.ts holds the apply.
 * Each state change commits in one transaction with the event it causes.
 */
export class RunStorage {
  private setSweepCursor = '';

  constructor(
    private readonly db: StagingDb,
    private readonly hooks?: StagingJobHooks | undefined,
  ) {}

  /**
   * Starts a run on the staged set as it is now: the run pins the source's staged revision and
   * a copy of its (key, hash) pairs, so later item writes do not change what it discovers. It
   * conflicts at once when `expectedBaseGeneration` is not the active generation, or when an
   * apply holds the source.
   *
   * The copy is made in chunks of CHUNK_ROWS rows, each a short transaction, with the event loop
   * let in between (data-plane.md §5.2). Meanwhile the source is claimed
   * (`pending_set = 'run:<id>'`, as a chunked snapshot claims it), so no item write changes the
   * set half-way: they wait, and so does a start that finds another claim. The run row is
   * written first, `queued` with `claimed_at` set: no job discovers it until the copy is whole
   * and that mark is cleared. If the copy fails, the run and its rows are removed and the
   * request fails, as one failed transaction did; if the process dies, the claim goes stale and
   * a job fails the run (StagingJobs, abandonStart).
   *
   * With `keyed`, the request's Idempotency-Key commits with what the start decides: a refusal or
   * a conflicting run with its answer, in that one transaction; a queued run holds the key in
   * progress from its first transaction, and its answer commits in the copy's last one. A start
   * that fails frees the key with its run (here, or abandonStart).
   */
  async start(
    tenantId: string,
    sourceId: string,
    runId: string,
    expectedBaseGeneration: number | undefined,
    at: Date,
    keyed?: KeyedWrite<StartOutcome>,
  ): Promise<StartOutcome> {
    const claim = `run:${runId}`;
    type Started = StartOutcome | { outcome: 'busy' } | { outcome: 'pinning'; run: RunRecord; set: string };
    let started: Started;
    for (;;) {
      started = await this.db.transaction(async (tx): Promise<Started> => {
        // A twin that holds the key answers this one, rather than its waiting for the twin's copy.
        await keyed?.check(tx);
        const refuse = async (refusal: SourceRefusal) => {
          await keyed?.settle(tx, refusal);
          return refusal;
        };
        const sourceRow = await lockSourceRow(tx, this.db, tenantId, sourceId);
        if (!sourceRow) return refuse({ outcome: 'source_not_found' });
        const source = toSource(sourceRow);
        if (source.status !== 'active') return refuse({ outcome: 'source_inactive' });
        const reason =
          expectedBaseGeneration !== undefined && expectedBaseGeneration !== source.activeGeneration
            ? `expectedBaseGeneration is ${expectedBaseGeneration}; the active generation is ${source.activeGeneration}`
            : source.applyingRunId !== null
              ? `the apply of ${source.applyingRunId} is in flight on this source`
              : null;
        // A chunked snapshot, or another start's copy, holds the set: this start goes after it.
        if (reason === null && pendingFresh(sourceRow, Date.now())) return { outcome: 'busy' };
        const row = await tx.get<RunRow>(
          `INSERT INTO staging_runs (id, tenant_id, source_id, status, base_generation, staged_revision,
             reason, claimed_at, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
          [
            runId,
            tenantId,
            sourceId,
            reason === null ? 'queued' : 'conflict',
            source.activeGeneration,
            source.stagedRevision,
            reason,
            reason === null ? Date.now() : null,
            at.getTime(),
            at.getTime(),
          ],
        );
        const run = toRun(row!);
        if (reason !== null) {
          await tx.publish(runConflicted(run, source.activeGeneration, reason));
          await keyed?.settle(tx, { outcome: 'started', run });
          return { outcome: 'started', run };
        }
        await tx.run('UPDATE staging_sources SET pending_set = ?, pending_at = ? WHERE id = ?', [
          claim,
          Date.now(),
          sourceId,
        ]);
        await keyed?.hold(tx, runId);
        // The visible set: a chunked snapshot not yet flipped is not part of it.
        return { outcome: 'pinning', run, set: itemSetOf(sourceRow) };
      });
      if (started.outcome !== 'busy') break;
      await sleep(BUSY_RETRY_MS);
    }
    if (started.outcome !== 'pinning') return started;
    const { run, set } = started;
    try {
      await this.pin(run, set, claim, keyed);
    } catch (error) {
      // As if the start's one transaction had failed: no run, no claim, no pinned rows, no key.
      await this.db
        .transaction(async (tx) => {
          await tx.run(
            'UPDATE staging_sources SET pending_set = NULL, pending_at = NULL WHERE id = ? AND pending_set = ?',
            [sourceId, claim],
          );
          await tx.run(`DELETE FROM staging_runs WHERE id = ? AND status = 'queued'`, [runId]);
          await keyed?.release(tx);
        })
        .catch(() => {});
      await dropRunItems(this.db, runId).catch(() => {});
      throw error;
    }
    return { outcome: 'started', run };
  }

  /**
   * Copies the set's (key, hash) pairs into the run's pinned set, a chunk per transaction, then
   * releases the claim; the last transaction stores the start's answer under its key.
   */
  private async pin(
    run: RunRecord,
    set: string,
    claim: string,
    keyed: KeyedWrite<StartOutcome> | undefined,
  ): Promise<void> {
    const bounded = `INSERT INTO staging_run_items (run_id, key, content_hash)
      SELECT ?, key, content_hash FROM staging_items
      WHERE tenant_id = ? AND source_id = ? AND key > ? AND key <= ?`;
    const lost = () => new Error(`the start of ${run.id} lost its claim on the source`);
    for (let after = '', chunk = 0; ; chunk++) {
      await this.hooks?.beforeChunk?.({ work: 'pin', sourceId: run.sourceId, runId: run.id, chunk });
      const bound = await this.db.transaction(async (tx) => {
        const held = await tx.run(
          'UPDATE staging_sources SET pending_at = ? WHERE id = ? AND pending_set = ?',
          [Date.now(), run.sourceId, claim],
        );
        if (held !== 1) throw lost();
        // A job failed the run meanwhile (its mark went stale: abandonStart): so does the start.
        const marked = await tx.run(
          `UPDATE staging_runs SET claimed_at = ? WHERE id = ? AND status = 'queued' AND claimed_at IS NOT NULL`,
          [Date.now(), run.id],
        );
        if (marked !== 1) throw lost();
        const last = await chunkBound(
          this.db,
          tx,
          'SELECT key FROM staging_items WHERE tenant_id = ? AND source_id = ? AND key > ?',
          [run.tenantId, set, after],
        );
        if (last === undefined) {
          await tx.run(`${bounded.replace(' AND key <= ?', '')}`, [run.id, run.tenantId, set, after]);
          // The copy is whole: the source is free, and the run is a job's to discover.
          const released = await tx.run(
            'UPDATE staging_sources SET pending_set = NULL, pending_at = NULL WHERE id = ? AND pending_set = ?',
            [run.sourceId, claim],
          );
          const queued = await tx.run(
            `UPDATE staging_runs SET claimed_at = NULL WHERE id = ? AND status = 'queued'`,
            [run.id],
          );
          if (released !== 1 || queued !== 1) throw lost();
          await keyed?.settle(tx, { outcome: 'started', run });
        } else {
          await tx.run(bounded, [run.id, run.tenantId, set, after, last]);
        }
        return last;
      });
      if (bound === undefined) return;
      after = bound;
      await yieldToEventLoop();
    }
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
        AND r.status NOT IN ('queued', 'running', 'failed')
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
   * Takes a queued run for discovery (or a running one whose claim went stale or was given back):
   * exactly one caller gets it. Returns the run, or undefined when another job has it.
   */
  async claimDiscovery(runId: string, at: Date, staleBefore: Date): Promise<RunRecord | undefined> {
    const row = await this.db.transaction((tx) =>
      tx.get<RunRow>(
        `UPDATE staging_runs SET status = 'running', claimed_at = ?, updated_at = ?
         WHERE id = ? AND ((status = 'queued' AND claimed_at IS NULL)
           OR (status = 'running' AND (claimed_at IS NULL OR claimed_at < ?)))
         RETURNING *`,
        [at.getTime(), at.getTime(), runId, staleBefore.getTime()],
      ),
    );
    return row ? toRun(row) : undefined;
  }

  /**
   * Gives a job's claim on a run back (StagingJobs.letGo), if the job still holds it: the next
   * sweep's claimDiscovery or claimBuild takes the run at once.
   */
  async releaseClaim(runId: string, status: 'running' | 'applying', claim: JobClaim): Promise<void> {
    await this.db.transaction((tx) =>
      tx.run('UPDATE staging_runs SET claimed_at = NULL WHERE id = ? AND status = ? AND claimed_at = ?', [
        runId,
        status,
        claim.at,
      ]),
    );
  }

  /**
   * A queued run whose start died while copying its pinned set (its mark is older than
   * `staleBefore`): it fails (`run.failed`). True if it did: the caller then drops what it
   * copied (releaseFailedRun), off the job's path.
   */
  async abandonStart(runId: string, at: Date, staleBefore: Date): Promise<boolean> {
    const reason = 'the run could not pin its item set: the server stopped while it was being copied';
    return this.db.transaction(async (tx) => {
      const row = await tx.get<RunRow>(
        `UPDATE staging_runs SET status = 'failed', reason = ?, claimed_at = NULL, updated_at = ?
         WHERE id = ? AND status = 'queued' AND claimed_at < ? RETURNING *`,
        [reason, at.getTime(), runId, staleBefore.getTime()],
      );
      if (!row) return false;
      // Its start's claim on the source goes with it: item writes need not wait for it to go
      // stale, and the start, if it is still alive, fails at its next chunk (pin).
      await tx.run(
        'UPDATE staging_sources SET pending_set = NULL, pending_at = NULL WHERE id = ? AND pending_set = ?',
        [row.source_id, `run:${runId}`],
      );
      // The key its request held is free again: a retry starts a run of its own.
      await releaseKeyOfRun(tx, row.tenant_id, runId);
      await tx.publish(runFailed(toRun(row), reason));
      return true;
    });
  }

  /**
   * Discovery's diff (the same result as diffItems): the pinned set against
   * the base generation's, written into staging_run_changes in chunks of CHUNK_ROWS keys, each a
   * short transaction that renews this job's claim on the run (renewClaim), with the event loop
   * let in between (data-plane.md §5.3); on Postgres one statement per pass. The comparison is SQL, keyed in the
   * database's own key order: every pinned key (added, updated, unchanged), then every key only
   * in the base (removed). Nobody reads a run's changes before it completes (`changes`), and a
   * discovery taken over from a dead job starts by dropping what that one wrote. Returns the
   * counts, or undefined when another job took the run.
   */
  async diffInChunks(run: RunRecord, claim: JobClaim): Promise<ChangeCounts | undefined> {
    let chunk = 0;
    const nextChunk = () =>
      this.hooks?.beforeChunk?.({ work: 'discovery', sourceId: run.sourceId, runId: run.id, chunk: chunk++ });
    // What a dead (or overtaken) job wrote; only while this job holds the run.
    await nextChunk();
    if (!(await dropRunChanges(this.db, run.id, claim))) return undefined;
    const counts: ChangeCounts = { added: 0, updated: 0, removed: 0, unchanged: 0 };
    const passes = [
      {
        bound: 'SELECT key FROM staging_run_items WHERE run_id = ? AND key > ?',
        boundParams: [run.id],
        insert: `INSERT INTO staging_run_changes (run_id, key, change, content_hash, previous_hash)
          SELECT r.run_id, r.key,
            CASE WHEN g.key IS NULL THEN 'added' WHEN g.content_hash = r.content_hash THEN 'unchanged' ELSE 'updated' END,
            r.content_hash, g.content_hash
          FROM staging_run_items AS r
          LEFT JOIN staging_generation_items AS g ON g.source_id = ? AND g.generation = ? AND g.key = r.key
          WHERE r.run_id = ? AND r.key > ?`,
        insertParams: [run.sourceId, run.baseGeneration, run.id],
        upper: ' AND r.key <= ?',
      },
      {
        bound: 'SELECT key FROM staging_generation_items WHERE source_id = ? AND generation = ? AND key > ?',
        boundParams: [run.sourceId, run.baseGeneration],
        insert: `INSERT INTO staging_run_changes (run_id, key, change, content_hash, previous_hash)
          SELECT ?, g.key, 'removed', NULL, g.content_hash
          FROM staging_generation_items AS g
          WHERE g.source_id = ? AND g.generation = ?
            AND NOT EXISTS (SELECT 1 FROM staging_run_items AS r WHERE r.run_id = ? AND r.key = g.key)
            AND g.key > ?`,
        insertParams: [run.id, run.sourceId, run.baseGeneration, run.id],
        upper: ' AND g.key <= ?',
      },
    ];
    for (const pass of passes) {
      for (let after = ''; ; ) {
        await nextChunk();
        const step = await this.db.transaction(async (tx) => {
          // Renews the claim, or stops here when another job took the run.
          const next = await renewClaim(tx, run.id, 'running', claim);
          if (next === undefined) return { held: false as const };
          const last = await chunkBound(this.db, tx, pass.bound, [...pass.boundParams, after]);
          const range = last === undefined ? [after] : [after, last];
          await tx.run(last === undefined ? pass.insert : pass.insert + pass.upper, [
            ...pass.insertParams,
            ...range,
          ]);
          const tally = await tx.all<{ change: Change; n: number }>(
            `SELECT change, count(*) AS n FROM staging_run_changes WHERE run_id = ? AND key > ?${
              last === undefined ? '' : ' AND key <= ?'
            } GROUP BY change`,
            [run.id, ...range],
          );
          return { held: true as const, next, last, tally };
        });
        if (!step.held) return undefined;
        claim.at = step.next;
        // The second pass's range also holds the first pass's keys: count only what it adds.
        for (const { change, n } of step.tally) {
          if (pass === passes[0] ? change !== 'removed' : change === 'removed') counts[change] += Number(n);
        }
        if (step.last === undefined) break;
        after = step.last;
        await yieldToEventLoop();
      }
    }
    return counts;
  }

  /** Completes the run with its diff's counts (`run.completed`), if this job's claim still holds it. */
  async completeDiscovery(run: RunRecord, claim: JobClaim, counts: ChangeCounts, at: Date): Promise<boolean> {
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
          claim.at,
        ],
      );
      if (updated === 0) return false;
      await tx.publish(runCompleted(run, counts, noop));
      return true;
    });
  }

  /**
   * One step of the sweep for unreachable item sets (sources.ts sweepItemSets), from where the
   * previous step stopped; every pass of the jobs' sweep queues one in their clean-up lane
   * (StagingJobs), which runs one thing at a time: never two steps at once.
   */
  async sweepItemSets(): Promise<number> {
    const { next, dropped } = await sweepItemSets(this.db, this.setSweepCursor);
    this.setSweepCursor = next;
    return dropped;
  }

  /**
   * Fails the run (`run.failed`), if this job's claim still holds it. True if it did: the caller
   * then drops its pinned set and changes (releaseFailedRun), off the job's path.
   */
  async failDiscovery(run: RunRecord, claim: JobClaim, reason: string, at: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      if (!(await endClaim(tx, run, claim, { from: 'running', to: 'failed', reason, at }))) return false;
      await tx.publish(runFailed(run, reason));
      return true;
    });
  }

  /**
   * A failed run's pinned set and whatever its discovery wrote, in chunks: the run is failed for
   * good, so nobody reads them or writes them any more, and a drop that stops half-way leaves
   * only rows nothing reads. The jobs run it in their clean-up lane (StagingJobs).
   */
  async releaseFailedRun(runId: string): Promise<void> {
    await dropRunItems(this.db, runId);
    await dropRunChanges(this.db, runId);
  }
}

/**
 * The last key of the next chunk of at most CHUNK_ROWS keys after the cursor (`sql` selects
 * `key` with the cursor as its last parameter), or undefined when fewer are left: then the
 * chunk is everything after the cursor. In the database's key order, whatever its collation.
 */
async function chunkBound(
  db: StagingDb,
  tx: Tx,
  sql: string,
  params: SqlParam[],
): Promise<string | undefined> {
  // Postgres runs a statement off the event loop: one statement per pass, not one per chunk
  // (chunked, the benchmark's discovery took 8–38 s there instead of well under one).
  if (db.dialect === 'postgres') return undefined;
  const row = await tx.get<{ key: string }>(`${sql} ORDER BY key LIMIT 1 OFFSET ?`, [
    ...params,
    CHUNK_ROWS - 1,
  ]);
  return row?.key;
}

/**
 * Ends a job's claim on a run that failed (`from` → `to`, with the reason), only while that
 * claim still holds it; the caller drops the run's pinned set after the commit (dropRunItems).
 * False when another job took the run.
 */
export async function endClaim(
  tx: Tx,
  run: RunRecord,
  claim: JobClaim,
  change: { from: 'running' | 'applying'; to: 'failed' | 'apply_failed'; reason: string; at: Date },
): Promise<boolean> {
  const updated = await tx.run(
    `UPDATE staging_runs SET status = ?, reason = ?, claimed_at = NULL, updated_at = ?
     WHERE id = ? AND status = ? AND claimed_at = ?`,
    [change.to, change.reason, change.at.getTime(), run.id, change.from, claim.at],
  );
  return updated !== 0;
}

/**
 * In a chunk's transaction: moves the job's claim on the run to now with a compare-and-swap on
 * the time it holds (`claim.at`), so that a job making progress never looks stale to another
 * instance's sweep. Returns the new time, which the caller takes into `claim.at` once the
 * transaction commits, or undefined when another job took the run (or it left `status`).
 */
export async function renewClaim(
  tx: Tx,
  runId: string,
  status: 'running' | 'applying',
  claim: JobClaim,
): Promise<number | undefined> {
  const next = Math.max(Date.now(), claim.at);
  const renewed = await tx.run(
    'UPDATE staging_runs SET claimed_at = ? WHERE id = ? AND status = ? AND claimed_at = ?',
    [next, runId, status, claim.at],
  );
  return renewed === 1 ? next : undefined;
}

/**
 * Drops a run's pinned set once the run no longer needs it (it failed, conflicted, or its apply
 * ended), a chunk per transaction with the event loop let in between: nothing reads the pinned
 * set of a run in those states, so what is left by a failure half-way is only garbage.
 */
export async function dropRunItems(db: StagingDb, runId: string): Promise<void> {
  for (;;) {
    const deleted = await db.transaction((tx) =>
      tx.run(
        `DELETE FROM staging_run_items WHERE run_id = ? AND key IN
           (SELECT key FROM staging_run_items WHERE run_id = ? ORDER BY key LIMIT ?)`,
        [runId, runId, CHUNK_ROWS],
      ),
    );
    if (deleted < CHUNK_ROWS) return;
    await yieldToEventLoop();
  }
}

/**
 * Drops what a discovery wrote into staging_run_changes (it failed, or died and is taken over),
 * in chunks. With `claim` (a discovery starting over), each chunk's transaction first renews
 * that claim on the running run, and the drop stops, deleting nothing more, once another job took
 * the run: false then.
 */
export async function dropRunChanges(db: StagingDb, runId: string, claim?: JobClaim): Promise<boolean> {
  for (;;) {
    const step = await db.transaction(async (tx) => {
      const next = claim && (await renewClaim(tx, runId, 'running', claim));
      if (claim && next === undefined) return undefined;
      const deleted = await tx.run(
        `DELETE FROM staging_run_changes WHERE run_id = ? AND key IN
           (SELECT key FROM staging_run_changes WHERE run_id = ? ORDER BY key LIMIT ?)`,
        [runId, runId, CHUNK_ROWS],
      );
      return { next, deleted };
    });
    if (step === undefined) return false;
    if (claim && step.next !== undefined) claim.at = step.next;
    if (step.deleted < CHUNK_ROWS) return true;
    await yieldToEventLoop();
  }
}
