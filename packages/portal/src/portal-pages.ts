import { KeyhookError } from '@keyhook/core';
import {
  DEFAULT_PREFIX,
  errorResponse,
  type KeyhookRequest,
  type KeyhookResponse,
  type RouteDefinition,
} from '@keyhook/core/http';
import { type BuiltAssets, loadBuiltAssets } from './built-assets.js';
import { pageHeaders } from './page-headers.js';
import { pageHtml } from './page-html.js';
import { type KeyhookPortalOptions, resolvePortalOptions } from './portal-options.js';

/** The page and its assets; the JSON API beside them is core's (keyhook-portal.ts). */
export const PAGE_ROUTES: readonly RouteDefinition[] = [
  { method: 'GET', path: '/' },
  { method: 'GET', path: '/assets/:file' },
];

/** Hashed names never change content: a year, and no revalidation. */
const ASSET_CACHE = 'public, max-age=31536000, immutable';

export interface PortalPages {
  /** The `path` option as checked (no trailing slash); undefined: the adapter's default. */
  path: string | undefined;
  routes: readonly RouteDefinition[];
  handle(request: KeyhookRequest): KeyhookResponse;
}

/**
 * Serves `GET /` (the app's page) and `GET /assets/<file>`. The options are checked and the
 * assets read here, once: a bad brand or a missing build fails at startup, not on a request.
 */
export function portalPages(
  options: KeyhookPortalOptions = {},
  assets: BuiltAssets = loadBuiltAssets(),
): PortalPages {
  const resolved = resolvePortalOptions(options);
  const headers = pageHeaders(resolved);
  // As the adapters mount it: its own path, from the same point as the prefix, or `<prefix>/portal`.
  const fallbackBase = resolved.path ?? `${DEFAULT_PREFIX}/portal`;
  return {
    path: resolved.path,
    routes: PAGE_ROUTES,
    handle(request) {
      if (request.method === 'GET' && (request.path === '/' || request.path === '')) {
        // The path the browser used, so the app's asset and API URLs resolve below it.
        const basePath = (request.basePath ?? fallbackBase).replace(/\/+$/, '');
        return { status: 200, headers: { ...headers }, body: pageHtml(resolved, basePath, assets.entry) };
      }
      const asset = request.method === 'GET' ? /^\/assets\/([^/]+)$/.exec(request.path) : null;
      if (asset) {
        const file = assets.files.get(asset[1]!);
        if (!file) return errorResponse(new KeyhookError('not_found', 'There is no such asset.'));
        return {
          status: 200,
          headers: {
            'content-type': file.contentType,
            'cache-control': ASSET_CACHE,
            'x-content-type-options': 'nosniff',
          },
          body: file.body,
        };
      }
      return errorResponse(new KeyhookError('not_found', 'There is no such page.'));
    },
  };
}
