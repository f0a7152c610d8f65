import type { WebhookDisabledReason, WebhookRecord, WebhookStatus } from '../store/types.js';

/** The admin view of a webhook (DESIGN.md §2). It never carries the signing secret. */
export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  status: WebhookStatus;
  disabledReason: WebhookDisabledReason | null;
  createdAt: string;
  updatedAt: string;
}

export function toWebhookView(webhook: WebhookRecord): WebhookView {
  return {
    id: webhook.id,
    url: webhook.url,
    events: [...webhook.events],
    status: webhook.status,
    disabledReason: webhook.disabledReason,
    createdAt: webhook.createdAt.toISOString(),
    updatedAt: webhook.updatedAt.toISOString(),
  };
}
