/**
 * `@keyhook/portal`: the customer portal's pages, and the function that serves them beside
 * keyhook's portal API. Every name here is a semver promise, listed in `etc/portal.api.md`.
 */
export { type KeyhookWithPortal, keyhookPortal } from './keyhook-portal.js';
export type { KeyhookPortalOptions, PortalBrand } from './portal-options.js';
