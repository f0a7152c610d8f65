import type { IdempotencyCompletion } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { completeIdempotency } from '../shared-statements.js';

export function prepareCompleteIdempotencyKey(db: Database.Database): ReturnType<typeof completeIdempotency> {
  return completeIdempotency(db);
}

export function completeIdempotencyKey(
  complete: ReturnType<typeof prepareCompleteIdempotencyKey>,
  completion: IdempotencyCompletion,
): boolean {
  const { responseSealed, tenantId, key, claimId } = completion;
  return complete.run(responseSealed, tenantId, key, claimId).changes > 0;
}
