// What the portal's API answers, as core types its routes and the OpenAPI document describes them
// (docs/decisions.md §22.19). Type exports only, so nothing of core reaches the bundle.
export type {
  ApiKeyView,
  DeliveryDetailView,
  DeliveryStatus,
  DeliveryView,
  EventCatalogEntry,
  PortalPermission,
  RateLimit,
  WebhookView,
} from '@keyhook/core';
export type {
  PageResponse,
  PortalExchangeAnswer,
  PortalSessionAnswer,
  PortalSessionView,
  WebhookStats,
} from '@keyhook/core/http';
export type { DeliveryRate, SignatureScheme } from '@keyhook/core/store';
