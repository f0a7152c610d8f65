import type { ResolvedPortalOptions } from './portal-options.js';

/**
 * The page's Content-Security-Policy: the app's own script and style only (no inline code, no
 * eval), images from the page's origin, data: URLs and the logo's origin, calls to its own API.
 */
export function contentSecurityPolicy(options: ResolvedPortalOptions): string {
  const images = ["'self'", 'data:', ...(options.brand.logoOrigin ? [options.brand.logoOrigin] : [])];
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${images.join(' ')}`,
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    `frame-ancestors ${options.frameAncestors.join(' ')}`,
  ].join('; ');
}

/**
 * The HTML page's headers. `no-store`: the page carries the base path it was asked at, and a
 * portal answer is never for a shared cache. `X-Frame-Options` only backs up a `'none'`: it
 * cannot name the origins a `frame-ancestors` list allows.
 */
export function pageHeaders(options: ResolvedPortalOptions): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': contentSecurityPolicy(options),
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  };
  if (options.frameAncestors.length === 1 && options.frameAncestors[0] === "'none'") {
    headers['x-frame-options'] = 'DENY';
  }
  return headers;
}
