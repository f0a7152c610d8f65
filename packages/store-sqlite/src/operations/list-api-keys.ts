import type { ApiKeyRecord, ListPage } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { type ApiKeyRow, KEY_COLUMNS, toRecord } from '../key-row.js';
import { listingPage, type TenantListing, tenantListing } from '../shared-statements.js';

export function prepareListApiKeys(db: Database.Database): TenantListing<ApiKeyRow> {
  return tenantListing(db, 'keyhook_api_keys', KEY_COLUMNS);
}

export function listApiKeys(sql: TenantListing<ApiKeyRow>, tenantId: string, page: ListPage): ApiKeyRecord[] {
  return listingPage(sql, tenantId, page).map(toRecord);
}
