import type { KeyhookRequest, KeyhookResponse, RouteDefinition } from '@keyhook/core';
import type { KeyhookPortalOptions } from './portal-options.js';
import { portalPages } from './portal-pages.js';

/**
 * Something an adapter serves below a path: a route list and one handler for them. The shape
 * of core's `Mountable` (packages/core/src/portal/portal-types.ts), written out here until core
 * exports it.
 */
export interface PortalMountable {
  /** Where it is served, from the same point as the adapter's `prefix`; undefined: the adapter's default. */
  readonly path?: string | undefined;
  /** Every route `handle` serves, relative to `path`. */
  readonly routes: readonly RouteDefinition[];
  /** Adapters stop reading a body past this many bytes and pass `bodyError: 'too_large'`. */
  readonly maxBodyBytes: number;
  /** Answers one request below `path`; `request.basePath` is the path the browser used. */
  handle(request: KeyhookRequest): Promise<KeyhookResponse>;
}

/** What `keyhookPortal()` needs of a keyhook: the portal's JSON API, `keyhook.portal.api`. */
export interface KeyhookWithPortal {
  /** `keyhook.portal`: sessions, and the JSON API the pages call. */
  readonly portal: { readonly api: PortalMountable };
}

/** Every path below `/api/` is the JSON API's; the rest are the pages'. */
const API_PATH = /^\/api(?:\/|$)/;

/**
 * The customer portal as one mountable route set: the app's page and assets, and keyhook's
 * portal API below `/api/`. Hand it to an adapter (`keyhookRouter(keyhook, { portal })`).
 * Throws a TypeError for a bad option, and an Error when the app's assets were not built.
 */
export function keyhookPortal(
  keyhook: KeyhookWithPortal,
  options: KeyhookPortalOptions = {},
): PortalMountable {
  const pages = portalPages(options);
  const api = keyhook.portal?.api;
  if (!api || typeof api.handle !== 'function') {
    throw new TypeError(
      'keyhookPortal: this keyhook has no portal API (keyhook.portal.api); use an @keyhook/core that has keyhook.portal',
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
