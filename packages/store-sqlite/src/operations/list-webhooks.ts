import type { ListPage, WebhookRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { listingPage, type TenantListing, tenantListing } from '../shared-statements.js';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

export function prepareListWebhooks(db: Database.Database): TenantListing<WebhookRow> {
  return tenantListing(db, 'keyhook_webhooks', WEBHOOK_COLUMNS);
}

export function listWebhooks(
  sql: TenantListing<WebhookRow>,
  tenantId: string,
  page: ListPage,
): WebhookRecord[] {
  return listingPage(sql, tenantId, page).map(toWebhookRecord);
}
