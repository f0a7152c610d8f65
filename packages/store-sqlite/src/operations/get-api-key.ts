import type { ApiKeyRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { toRecord } from '../key-row.js';
import { apiKeyById } from '../shared-statements.js';

export function prepareGetApiKey(db: Database.Database): ReturnType<typeof apiKeyById> {
  return apiKeyById(db);
}

export function getApiKey(
  byId: ReturnType<typeof prepareGetApiKey>,
  tenantId: string,
  id: string,
): ApiKeyRecord | null {
  const row = byId.get(tenantId, id);
  return row ? toRecord(row) : null;
}
