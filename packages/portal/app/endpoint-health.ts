import type { WebhookStats, WebhookView } from './api-types.js';

/** "97% of 120", or "No attempts", over the stats' window (the last 24 hours). */
export function successRate(stats: WebhookStats | undefined, webhookId: string): string {
  const row = stats?.data.find((item) => item.webhookId === webhookId);
  const total = row ? row.succeeded + row.failed : 0;
  if (!row || total === 0) return 'No attempts';
  return `${Math.floor((row.succeeded / total) * 100)}% of ${total}`;
}

export function disabledReasonText(webhook: WebhookView): string {
  if (webhook.status === 'active') return '—';
  if (webhook.disabledReason === 'failures') return 'Too many failed deliveries';
  if (webhook.disabledReason === 'gone') return 'The receiver answered 410 Gone';
  return 'Disabled by hand';
}
