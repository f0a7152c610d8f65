import type { Mountable } from '@keyhook/core/http';
import type { KeyhookPortalOptions } from './portal-options.js';
import { portalPages } from './portal-pages.js';

/** What `keyhookPortal()` needs of a keyhook: the portal's JSON API, `keyhook.portal.api`. */
export interface KeyhookWithPortal {
  /** `keyhook.portal`: sessions, and the JSON API the pages call. */
  readonly portal: { readonly api: Mountable };
}

/** Every path below `/api/` is the JSON API's; the rest are the pages'. */
const API_PATH = /^\/api(?:\/|$)/;

/**
 * The customer portal as one mountable route set: the app's page and assets, and keyhook's
 * portal API below `/api/`. Hand it to an adapter (`keyhookRouter(keyhook, { portal })`).
 * Throws a TypeError for a bad option, and an Error when the app's assets were not built.
 */
export function keyhookPortal(keyhook: KeyhookWithPortal, options: KeyhookPortalOptions = {}): Mountable {
  const pages = portalPages(options);
  const api = keyhook.portal?.api;
  if (!api || typeof api.handle !== 'function') {
    throw new TypeError(
      'keyhookPortal: this keyhook has no portal API (keyhook.portal.api); use an @keyhook/core that has keyhook.portal',
    );
  }
  if (api.routes.length === 0) {
    throw new TypeError(
      "keyhookPortal: keyhook's store keeps no portal sessions (PortalSessionStore), so its portal API serves nothing: use a store that keeps them (each store keyhook ships does)",
    );
  }
  return {
    path: pages.path,
    routes: [...pages.routes, ...api.routes],
    maxBodyBytes: api.maxBodyBytes,
    async handle(request) {
      return API_PATH.test(request.path) ? api.handle(request) : pages.handle(request);
    },
  };
}
