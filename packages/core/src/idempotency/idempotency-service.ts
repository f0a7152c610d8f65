import { createHash } from 'node:crypto';
import type { Clock, RandomBytes } from '../clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import { KeyhookError } from '../errors.js';
import type { KeyhookResponse } from '../http/messages.js';
import { errorResponse, toKeyhookError } from '../http/response.js';
import type { Logger } from '../logger.js';
import type { IdempotencyCompletion, IdempotencyRecord, Store } from '../store/types.js';
import { canonicalJson } from './canonical-json.js';
import { checkIdempotencyKey, IDEMPOTENCY_REFUSALS_NOT_KEPT } from './key-rules.js';

export const DEFAULT_IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** A claim not completed within this is taken as a request that died (docs/decisions.md §7.6). */
export const IDEMPOTENCY_LOCK_MS = 60_000;
const PURGE_EVERY_MS = 60 * 60 * 1000;

export interface IdempotencyDeps {
  store: Store;
  clock: Clock;
  randomBytes: RandomBytes;
  secrets: SecretBox;
  logger: Logger;
  retentionMs?: number | undefined;
}

/** The claim a request holds while it runs: it can finish in the same transaction as its write. */
export class IdempotencyClaim {
  /** Set once the answer was handed to the store with the write it answers for. */
  completedInline = false;

  constructor(
    private readonly box: SecretBox,
    readonly tenantId: string,
    readonly key: string,
    readonly claimId: string,
  ) {}

  /** The completion that stores `response`; pass it to the store call that does the write. */
  completion(response: KeyhookResponse): IdempotencyCompletion {
    this.completedInline = true;
    return this.sealed(response);
  }

  sealed(response: KeyhookResponse): IdempotencyCompletion {
    const stored = JSON.stringify({ status: response.status, body: response.body });
    return {
      tenantId: this.tenantId,
      key: this.key,
      claimId: this.claimId,
      responseSealed: this.box.seal(stored, responseContext(this.tenantId, this.key)),
    };
  }
}

/**
 * Idempotency-Key for POSTs (docs/http-api.md §4.3 rules 2–4, 6; docs/decisions.md §7): per tenant,
 * fingerprinted by the operation and the canonical JSON body, claimed atomically in the store, and
 * answered from the stored (encrypted) response on a retry.
 */
export class Idempotency {
  private readonly retentionMs: number;
  private lastPurgeMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly deps: IdempotencyDeps) {
    this.retentionMs = deps.retentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_MS;
    if (!Number.isSafeInteger(this.retentionMs) || this.retentionMs < IDEMPOTENCY_LOCK_MS) {
      throw new TypeError(`idempotency retention must be at least ${IDEMPOTENCY_LOCK_MS} ms`);
    }
  }

  /**
   * Runs `execute` once per (tenant, key). Without a key it simply runs. A twin in flight
   * gets 409 idempotency_in_progress; the key with another body or operation gets 409
   * idempotency_conflict; the key with the same body gets the stored answer again.
   */
  async run(
    tenantId: string,
    key: string | undefined,
    operation: string,
    body: unknown,
    execute: (claim: IdempotencyClaim | null) => Promise<KeyhookResponse>,
  ): Promise<KeyhookResponse> {
    if (key === undefined) return execute(null);
    checkIdempotencyKey(key);
    const now = this.deps.clock.now();
    this.purgeIfDue(now);
    const record: IdempotencyRecord = {
      tenantId,
      key,
      fingerprint: fingerprintOf(operation, body),
      claimId: Buffer.from(this.deps.randomBytes(16)).toString('hex'),
      state: 'in_progress',
      responseSealed: null,
      createdAt: now,
      lockedUntil: new Date(now.getTime() + IDEMPOTENCY_LOCK_MS),
      expiresAt: new Date(now.getTime() + this.retentionMs),
    };
    const claimed = await this.deps.store.claimIdempotencyKey(record, now);
    if (claimed.outcome === 'exists') return this.answerExisting(claimed.record, record.fingerprint);

    const claim = new IdempotencyClaim(this.deps.secrets, tenantId, key, record.claimId);
    let response: KeyhookResponse;
    try {
      response = await execute(claim);
    } catch (error) {
      const refusal = toKeyhookError(error);
      await this.settle(claim, kept(refusal.status, refusal.code) ? errorResponse(refusal) : null);
      throw error;
    }
    if (!claim.completedInline) await this.settle(claim, kept(response.status) ? response : null);
    return response;
  }

  private answerExisting(existing: IdempotencyRecord, fingerprint: string): KeyhookResponse {
    if (existing.fingerprint !== fingerprint) {
      throw new KeyhookError(
        'idempotency_conflict',
        'This Idempotency-Key was already used with a different request.',
      );
    }
    if (existing.state === 'in_progress' || existing.responseSealed === null) {
      throw new KeyhookError(
        'idempotency_in_progress',
        'A request with this Idempotency-Key is still in progress; retry later.',
      );
    }
    const opened = this.deps.secrets.open(
      existing.responseSealed,
      responseContext(existing.tenantId, existing.key),
    );
    const stored = JSON.parse(opened) as { status: number; body: string | null };
    const headers: Record<string, string> = { 'idempotent-replayed': 'true' };
    if (stored.body !== null) headers['content-type'] = 'application/json; charset=utf-8';
    return { status: stored.status, headers, body: stored.body };
  }

  /** Stores the answer, or frees the key when the answer is not kept. Never throws: the lock expires anyway. */
  private async settle(claim: IdempotencyClaim, response: KeyhookResponse | null): Promise<void> {
    try {
      if (response) await this.deps.store.completeIdempotencyKey(claim.sealed(response));
      else await this.deps.store.releaseIdempotencyKey(claim.tenantId, claim.key, claim.claimId);
    } catch (error) {
      this.deps.logger.warn({ err: error, key: claim.key }, 'could not settle an idempotency key');
    }
  }

  /** Expired records count as absent at once; deleting them is housekeeping, off the request path. */
  private purgeIfDue(now: Date): void {
    const nowMs = now.getTime();
    if (nowMs - this.lastPurgeMs < PURGE_EVERY_MS) return;
    this.lastPurgeMs = nowMs;
    this.deps.store.purgeIdempotencyKeys(now).catch((error: unknown) => {
      this.lastPurgeMs = Number.NEGATIVE_INFINITY;
      this.deps.logger.warn({ err: error }, 'could not purge expired idempotency keys');
    });
  }
}

function fingerprintOf(operation: string, body: unknown): string {
  return createHash('sha256')
    .update(operation)
    .update('\n')
    .update(canonicalJson(body ?? null))
    .digest('hex');
}

function kept(status: number, code?: string): boolean {
  return status < 500 && (code === undefined || !IDEMPOTENCY_REFUSALS_NOT_KEPT.has(code));
}

const responseContext = (tenantId: string, key: string) =>
  JSON.stringify(['idempotency-response', tenantId, key]);
