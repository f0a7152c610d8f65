import { createHash, randomUUID } from 'node:crypto';
import { type Clock, isKeyhookError, KeyhookError } from '@keyhook/core';
import {
  canonicalJson,
  checkIdempotencyKey,
  errorResponse,
  IDEMPOTENCY_REFUSALS_NOT_KEPT,
  type KeyhookResponse,
} from '@keyhook/core/http';
import { CHUNK_ROWS, type StagingDb, type Tx, yieldToEventLoop } from './db.js';
import { StagingError } from './errors.js';

/** How long a first answer is kept: keyhook's default for its own keys (docs/http-api.md §8). */
export const KEY_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * Refusals that free the key instead of being kept: keyhook's (the client fixes the request and
 * sends it again), and those that say "not now" about a run whose state moves on by itself: kept,
 * a retry would hear a state that no longer holds. None wrote anything.
 */
const NOT_KEPT = new Set([...IDEMPOTENCY_REFUSALS_NOT_KEPT, 'run_not_ready', 'apply_in_progress']);

/**
 * Takes the key with this request's row, in the caller's transaction: a new key, one this request
 * already holds (a run start completing), or an expired one. One statement, so of concurrent
 * requests with one key exactly one writes it: on Postgres the others wait for its transaction,
 * then change nothing (0 rows); on SQLite transactions run one at a time.
 */
const CLAIM = `INSERT INTO staging_idempotency_keys
    (tenant_id, key, fingerprint, claim_id, pending_run, answer_status, answer_body, created_at, expires_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (tenant_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
    claim_id = excluded.claim_id, pending_run = excluded.pending_run,
    answer_status = excluded.answer_status, answer_body = excluded.answer_body,
    created_at = excluded.created_at, expires_at = excluded.expires_at
  WHERE staging_idempotency_keys.claim_id = excluded.claim_id OR staging_idempotency_keys.expires_at <= ?`;

/** Another request's row for the key, while it lives. */
const HELD_BY_ANOTHER = `SELECT fingerprint, answer_status, answer_body FROM staging_idempotency_keys
  WHERE tenant_id = ? AND key = ? AND claim_id <> ? AND expires_at > ?`;

/** One chunk of expired keys; the outer test again, so a key taken over meanwhile stays. */
const PURGE = `DELETE FROM staging_idempotency_keys WHERE expires_at <= ? AND (tenant_id, key) IN
  (SELECT tenant_id, key FROM staging_idempotency_keys WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`;

interface KeyRow {
  fingerprint: string;
  answer_status: number | null;
  answer_body: string | null;
}

/**
 * A stored first answer on its way to the client again. Thrown, so that it leaves the work and
 * rolls back the transaction it was found in; the routes' error handler sends it.
 */
export class Replay extends Error {
  constructor(readonly response: KeyhookResponse) {
    super('the first answer to this Idempotency-Key');
    this.name = 'Replay';
  }
}

/** A keyed request's part in the transactions of its write, as the storage calls it. */
export interface KeyedWrite<O> {
  /** Throws the answer of another request that holds the key (a run start checks before it waits). */
  check(tx: Tx): Promise<void>;
  /**
   * Last in the transaction that decided `outcome`: stores the answer it makes, so both commit or
   * neither does; an answer not kept leaves the key free. Throws the other request's answer when
   * another holds the key: the transaction rolls back, and nothing is written twice.
   */
  settle(tx: Tx, outcome: O): Promise<void>;
  /** A run start's first transaction: holds the key, in progress, while the start copies its set. */
  hold(tx: Tx, runId: string): Promise<void>;
  /** The start failed: frees the key held for it, in the transaction that removes its run. */
  release(tx: Tx): Promise<void>;
}

/**
 * The data plane's Idempotency-Keys (data-plane.md §3.4): per tenant, fingerprinted by the route,
 * its path parameters and the canonical JSON body, and kept with the first answer in the data
 * plane's own tables, in the transaction of the write it answers for.
 */
export class IdempotencyKeys {
  constructor(
    private readonly db: StagingDb,
    private readonly clock: Clock,
  ) {}

  /** The request's key, or undefined without the header; a malformed key is a 400. */
  of(
    tenantId: string,
    header: string | string[] | undefined,
    request: { route: string; params: Record<string, string>; body: unknown; status: number },
  ): RequestKey | undefined {
    if (header === undefined) return undefined;
    const key = checkIdempotencyKey(Array.isArray(header) ? header.join(', ') : header);
    const fingerprint = createHash('sha256')
      .update(canonicalJson([request.route, request.params, request.body ?? null]))
      .digest('hex');
    return new RequestKey(this.db, this.clock, tenantId, key, fingerprint, request.status);
  }

  /**
   * Deletes the expired keys, a chunk per transaction: the jobs' sweep runs it, off the request
   * path. An expired key counts as absent already; this only reclaims the space.
   */
  async purgeExpired(): Promise<number> {
    const now = this.clock.now().getTime();
    const due = await this.db.read((tx) =>
      tx.get('SELECT 1 AS due FROM staging_idempotency_keys WHERE expires_at <= ? LIMIT 1', [now]),
    );
    if (due === undefined) return 0;
    let purged = 0;
    for (;;) {
      const deleted = await this.db.transaction((tx) => tx.run(PURGE, [now, now, CHUNK_ROWS]));
      purged += deleted;
      if (deleted < CHUNK_ROWS) return purged;
      await yieldToEventLoop();
    }
  }
}

/** One request's Idempotency-Key: its tenant, the key, and the fingerprint of what it asks. */
export class RequestKey {
  /** Tells this request's row from another's with the same key. */
  private readonly claimId = randomUUID();

  constructor(
    private readonly db: StagingDb,
    private readonly clock: Clock,
    private readonly tenantId: string,
    private readonly key: string,
    private readonly fingerprint: string,
    /** The route's success status: the status of a kept success. */
    private readonly status: number,
  ) {}

  /** Before any work: throws the answer of the request that used the key first, if one did. */
  check(): Promise<void> {
    return this.db.read((tx) => this.heldByAnother(tx));
  }

  /**
   * The key's part in the write's transactions; `answer` gives the body an outcome answers with,
   * or throws the refusal it is (the same function the API answers with after the commit).
   */
  write<O>(answer: (outcome: O) => unknown): KeyedWrite<O> {
    return {
      check: (tx) => this.heldByAnother(tx),
      settle: async (tx, outcome) => {
        const response = kept(this.status, () => answer(outcome));
        if (response) return this.claim(tx, null, response);
        await tx.run(
          'DELETE FROM staging_idempotency_keys WHERE tenant_id = ? AND key = ? AND claim_id = ?',
          [this.tenantId, this.key, this.claimId],
        );
        await this.heldByAnother(tx);
      },
      hold: (tx, runId) => this.claim(tx, runId, null),
      release: async (tx) => {
        await tx.run(
          'DELETE FROM staging_idempotency_keys WHERE tenant_id = ? AND key = ? AND claim_id = ? AND answer_status IS NULL',
          [this.tenantId, this.key, this.claimId],
        );
      },
    };
  }

  private async claim(tx: Tx, pendingRun: string | null, response: KeyhookResponse | null): Promise<void> {
    const now = this.clock.now().getTime();
    const written = await tx.run(CLAIM, [
      this.tenantId,
      this.key,
      this.fingerprint,
      this.claimId,
      pendingRun,
      response?.status ?? null,
      response?.body ?? null,
      now,
      now + KEY_RETENTION_MS,
      now,
    ]);
    if (written === 1) return;
    await this.heldByAnother(tx);
    throw inProgress(); // held a moment ago, gone now: the client asks again
  }

  /** Throws what another request's row for the key answers: its first answer, or a 409. */
  private async heldByAnother(tx: Tx): Promise<void> {
    const row = await tx.get<KeyRow>(HELD_BY_ANOTHER, [
      this.tenantId,
      this.key,
      this.claimId,
      this.clock.now().getTime(),
    ]);
    if (row === undefined) return;
    // docs/http-api.md §4.3 rules 3 and 4, in keyhook's words.
    if (row.fingerprint !== this.fingerprint) {
      throw new KeyhookError(
        'idempotency_conflict',
        'This Idempotency-Key was already used with a different request.',
      );
    }
    if (row.answer_status === null) throw inProgress();
    const headers: Record<string, string> = { 'idempotent-replayed': 'true' };
    if (row.answer_body !== null) headers['content-type'] = 'application/json; charset=utf-8';
    throw new Replay({ status: Number(row.answer_status), headers, body: row.answer_body });
  }
}

/** A run start whose key this request held is gone: frees the key with the run (abandonStart). */
export async function releaseKeyOfRun(tx: Tx, tenantId: string, runId: string): Promise<void> {
  await tx.run(
    'DELETE FROM staging_idempotency_keys WHERE tenant_id = ? AND pending_run = ? AND answer_status IS NULL',
    [tenantId, runId],
  );
}

const inProgress = () =>
  new KeyhookError(
    'idempotency_in_progress',
    'A request with this Idempotency-Key is still in progress; retry later.',
  );

/** The answer `decide` makes, as sent, or null when it is not kept (a 5xx is thrown on: the transaction fails). */
function kept(status: number, decide: () => unknown): KeyhookResponse | null {
  let body: unknown;
  try {
    body = decide();
  } catch (error) {
    const refusal =
      error instanceof StagingError
        ? error.toResponse()
        : isKeyhookError(error)
          ? errorResponse(error)
          : undefined;
    if (refusal === undefined || refusal.status >= 500) throw error;
    return NOT_KEPT.has((error as StagingError | KeyhookError).code) ? null : refusal;
  }
  return { status, headers: {}, body: body === undefined ? null : JSON.stringify(body) };
}
