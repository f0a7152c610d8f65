import type { WebhookRecord } from '@keyhook/core/store';
import type Database from 'better-sqlite3';
import { toWebhookRecord, WEBHOOK_COLUMNS, type WebhookRow } from '../webhook-row.js';

/** A rotation's named parameters. */
interface RotateSecretParams {
  secret_sealed: string;
  public_key: string | null;
  previous_expires_at: number | null;
  updated_at: number;
  tenant_id: string;
  id: string;
}

export function prepareRotateWebhookSecret(
  db: Database.Database,
): Database.Statement<RotateSecretParams, WebhookRow> {
  // One statement: the right-hand sides read the row as it was, so with an expiry the previous
  // secret is the sealed value this replaces, exactly as stored; without one, both are cleared.
  return db.prepare(
    `UPDATE keyhook_webhooks SET secret_sealed = @secret_sealed, public_key = @public_key,
          previous_secret_sealed = CASE WHEN @previous_expires_at IS NULL THEN NULL ELSE secret_sealed END,
          previous_secret_expires_at = @previous_expires_at, updated_at = @updated_at
        WHERE tenant_id = @tenant_id AND id = @id RETURNING ${WEBHOOK_COLUMNS}`,
  );
}

export function rotateWebhookSecret(
  rotate: ReturnType<typeof prepareRotateWebhookSecret>,
  tenantId: string,
  id: string,
  secretSealed: string,
  publicKey: string | null,
  at: Date,
  previousExpiresAt: Date | null,
): WebhookRecord | null {
  const row = rotate.get({
    secret_sealed: secretSealed,
    public_key: publicKey,
    previous_expires_at: previousExpiresAt === null ? null : previousExpiresAt.getTime(),
    updated_at: at.getTime(),
    tenant_id: tenantId,
    id,
  });
  return row ? toWebhookRecord(row) : null;
}
