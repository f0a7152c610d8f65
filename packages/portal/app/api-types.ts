// What the portal's API answers, as core types its routes and the OpenAPI document describes them
// (docs/decisions.md §22.19). Type exports only, so nothing of core reaches the bundle.
export type {
  ApiKeyView,
  DeliveryDetailView,
  DeliveryStatus,
  DeliveryView,
  EndpointRateLimit,
  EventCatalogEntry,
  PageResponse,
  PortalExchangeAnswer,
  PortalPermission,
  PortalSessionAnswer,
  PortalSessionView,
  RateLimit,
  SignatureScheme,
  WebhookStats,
  WebhookView,
} from '@keyhook/core';
