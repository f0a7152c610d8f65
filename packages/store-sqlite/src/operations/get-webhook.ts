import type { WebhookRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { webhookById } from '../shared-statements.js';
import { toWebhookRecord } from '../webhook-row.js';

export function prepareGetWebhook(db: Database.Database): ReturnType<typeof webhookById> {
  return webhookById(db);
}

export function getWebhook(
  byId: ReturnType<typeof prepareGetWebhook>,
  tenantId: string,
  id: string,
): WebhookRecord | null {
  const row = byId.get(tenantId, id);
  return row ? toWebhookRecord(row) : null;
}
