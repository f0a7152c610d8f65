import type {
  SignatureScheme,
  WebhookDisabledReason,
  WebhookRecord,
  WebhookStatus,
} from '@keyhook/core/store';
import { twinClaimOf } from '@keyhook/core/store';
import type { StatementResult } from './host-transaction.js';

/** The keyhook_webhooks columns, in the order `toWebhookParams` binds them. */
export const WEBHOOK_COLUMNS =
  'id, tenant_id, url, events, twin_key, status, disabled_reason, secret_sealed, previous_secret_sealed, previous_secret_expires_at, signature_scheme, rate_per_second, created_at, updated_at, public_key, disabled_at, description';

/** A row as pg returns it with its default parsers: timestamptz → Date, text[] → string[]. */
export interface WebhookRow {
  id: string;
  tenant_id: string;
  url: string;
  events: string[];
  twin_key: string;
  status: WebhookStatus;
  disabled_reason: WebhookDisabledReason | null;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  /** Migration 0013; 'keyhook' for rows from before it. */
  signature_scheme: SignatureScheme;
  /** Migration 0014; NULL (no limit) for rows from before it. */
  rate_per_second: number | null;
  created_at: Date;
  updated_at: Date;
  /** Migration 0016; NULL (a shared secret) for rows from before it. */
  public_key: string | null;
  /** Migration 0018; for rows disabled before it, their updated_at. */
  disabled_at: Date | null;
  /** Migration 0018; NULL (none) for rows from before it. */
  description: string | null;
}

export function toWebhookRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    url: row.url,
    events: [...row.events],
    twinKey: row.twin_key,
    status: row.status,
    disabledReason: row.disabled_reason,
    disabledAt: row.disabled_at,
    description: row.description,
    secretSealed: row.secret_sealed,
    previousSecretSealed: row.previous_secret_sealed,
    previousSecretExpiresAt: row.previous_secret_expires_at,
    signatureScheme: row.signature_scheme,
    deliveryRate: row.rate_per_second === null ? null : { perSecond: row.rate_per_second },
    publicKey: row.public_key,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** A statement's first row as a webhook, or null when it returned none. */
export function oneWebhook(result: StatementResult<WebhookRow>): WebhookRecord | null {
  const row = result.rows[0];
  return row ? toWebhookRecord(row) : null;
}

/**
 * An insert's parameters: WEBHOOK_COLUMNS in order, then the twin claim core's rule gives the
 * status (the twin key or null; migration 0011), $18, which keyhook_webhooks_twin_claim_idx holds.
 */
export function toWebhookParams(webhook: WebhookRecord): unknown[] {
  return [
    webhook.id,
    webhook.tenantId,
    webhook.url,
    webhook.events,
    webhook.twinKey,
    webhook.status,
    webhook.disabledReason,
    webhook.secretSealed,
    webhook.previousSecretSealed,
    webhook.previousSecretExpiresAt,
    webhook.signatureScheme,
    webhook.deliveryRate?.perSecond ?? null,
    webhook.createdAt,
    webhook.updatedAt,
    webhook.publicKey,
    webhook.disabledAt,
    webhook.description,
    twinClaimOf(webhook),
  ];
}
