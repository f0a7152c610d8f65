// The views core answers with; type exports only, so nothing of core reaches the bundle.
export type {
  ApiKeyView,
  DeliveryDetailView,
  DeliveryView,
  EndpointRateLimit,
  RateLimit,
  SignatureScheme,
  WebhookView,
} from '@keyhook/core';

export type PortalPermission = 'keys:read' | 'keys:write' | 'webhooks:read' | 'webhooks:write';

export interface PortalEventType {
  type: string;
  description?: string;
  schema: Record<string, unknown> | null;
  example: Record<string, unknown> | null;
}

/** `GET /api/session`'s `session`, and the exchange's. */
export interface PortalSession {
  id: string;
  tenantId: string;
  expiresAt: string;
  permissions: PortalPermission[];
  scopes: { name: string; description?: string }[];
  events: PortalEventType[];
  headers: { signature: string; eventId: string };
  /** Endpoint URLs may be http:// or loopback here (development). */
  developmentUrls: boolean;
}

export interface Page<Item> {
  data: Item[];
  nextCursor: string | null;
}

export interface WebhookStats {
  since: string;
  data: { webhookId: string; succeeded: number; failed: number }[];
}
