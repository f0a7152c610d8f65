import type { WebhookStats, WebhookView } from './api-types.js';
import { formatDate } from './dates.js';

/** "97 % of 120 attempts", or "No attempts", over the stats' window (the last 24 hours). */
export function successRate(stats: WebhookStats | undefined, webhookId: string): string {
  const row = stats?.data.find((item) => item.webhookId === webhookId);
  const total = row ? row.succeeded + row.failed : 0;
  if (!row || total === 0) return 'No attempts';
  return `${Math.floor((row.succeeded / total) * 100)} % of ${total} ${total === 1 ? 'attempt' : 'attempts'}`;
}

export function disabledReasonText(webhook: WebhookView): string {
  if (webhook.status === 'active') return '—';
  if (webhook.disabledReason === 'failures') return 'Too many failed deliveries';
  if (webhook.disabledReason === 'gone') return 'The receiver answered 410 Gone';
  return 'Disabled by hand';
}

/** Why and when, as a sentence: "disabled on 6 Dec 2026, 12:00, after too many failed deliveries in a row". */
export function disabledSentence(webhook: WebhookView): string {
  const when = webhook.disabledAt ? ` on ${formatDate(webhook.disabledAt)}` : '';
  if (webhook.disabledReason === 'failures')
    return `disabled${when} after too many failed deliveries in a row`;
  if (webhook.disabledReason === 'gone') return `disabled${when} because its receiver answered 410 Gone`;
  return `disabled by hand${when}`;
}
