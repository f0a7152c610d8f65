import type {
  SignatureScheme,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
} from '@keyhook/core/store';
import { twinClaimOf } from '@keyhook/core/store';
import { toDate, toMillis } from './timestamps.js';

/** A row of `keyhook_webhooks`. `events` is the JSON text of the array, in the record's order. */
export interface WebhookRow {
  id: string;
  tenant_id: string;
  url: string;
  events: string;
  twin_key: string;
  status: WebhookStatus;
  disabled_reason: WebhookDisabledReason | null;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: number | null;
  /** Migration 0012; 'keyhook' for rows from before it. */
  signature_scheme: SignatureScheme;
  /** Migration 0013; NULL (no limit) for rows from before it. */
  rate_per_second: number | null;
  /** Migration 0015; NULL (a shared secret) for rows from before it. */
  public_key: string | null;
  /** Migration 0017; for rows disabled before it, their updated_at. */
  disabled_at: number | null;
  /** Migration 0017; NULL (none) for rows from before it. */
  description: string | null;
  created_at: number;
  updated_at: number;
}

export const WEBHOOK_COLUMNS =
  'id, tenant_id, url, events, twin_key, status, disabled_reason, secret_sealed, previous_secret_sealed, previous_secret_expires_at, signature_scheme, rate_per_second, public_key, disabled_at, description, created_at, updated_at';

/**
 * What an insert writes: the row, and the twin claim core's rule gives its status (the twin key or
 * null; migration 0010), which the unique index keyhook_webhooks_twin_claim holds.
 */
export interface WebhookInsertRow extends WebhookRow {
  twin_claim: string | null;
}

export function toWebhookRow(record: WebhookRecord): WebhookInsertRow {
  return {
    id: record.id,
    tenant_id: record.tenantId,
    url: record.url,
    events: JSON.stringify(record.events),
    twin_key: record.twinKey,
    status: record.status,
    disabled_reason: record.disabledReason,
    secret_sealed: record.secretSealed,
    previous_secret_sealed: record.previousSecretSealed,
    previous_secret_expires_at: toMillis(record.previousSecretExpiresAt),
    signature_scheme: record.signatureScheme,
    rate_per_second: record.deliveryRate?.perSecond ?? null,
    public_key: record.publicKey,
    disabled_at: toMillis(record.disabledAt),
    description: record.description,
    created_at: record.createdAt.getTime(),
    updated_at: record.updatedAt.getTime(),
    twin_claim: twinClaimOf(record),
  };
}

export function toWebhookRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    twinKey: row.twin_key,
    status: row.status,
    disabledReason: row.disabled_reason,
    disabledAt: toDate(row.disabled_at),
    description: row.description,
    secretSealed: row.secret_sealed,
    previousSecretSealed: row.previous_secret_sealed,
    previousSecretExpiresAt: toDate(row.previous_secret_expires_at),
    signatureScheme: row.signature_scheme,
    deliveryRate: row.rate_per_second === null ? null : { perSecond: row.rate_per_second },
    publicKey: row.public_key,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}
