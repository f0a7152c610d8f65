import { CONFIG_ELEMENT_ID, type PortalPageConfig } from './page-config.js';
import type { ResolvedPortalOptions } from './portal-options.js';

const HTML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char]!);
}

/**
 * JSON that cannot end its `<script>` block or open a comment there: `<`, `>` and `&` as
 * `\u` escapes, and the two line separators JSON allows raw but old parsers do not.
 */
export function scriptSafeJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (char) => {
    return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/**
 * The one page: no inline script or style, the brand as escaped text, the config as data that
 * CSP does not run, and the app's hashed assets under the base path.
 */
export function pageHtml(
  options: ResolvedPortalOptions,
  basePath: string,
  assets: { script: string; style: string },
): string {
  const { brand } = options;
  const name = brand.name ?? 'Developer portal';
  const config: PortalPageConfig = {
    basePath,
    brand: { name: brand.name, logoUrl: brand.logoUrl, accentColor: brand.accentColor },
  };
  const assetUrl = (file: string) => escapeHtml(`${basePath}/assets/${file}`);
  const theme = brand.theme ? ` data-theme="${brand.theme}"` : '';
  return `<!doctype html>
<html lang="en"${theme}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="application-name" content="${escapeHtml(name)}">
<title>${escapeHtml(name)}</title>
<link rel="stylesheet" href="${assetUrl(assets.style)}">
<script type="application/json" id="${CONFIG_ELEMENT_ID}">${scriptSafeJson(config)}</script>
<script type="module" src="${assetUrl(assets.script)}"></script>
</head>
<body>
<div id="app"><noscript><p>This portal needs JavaScript.</p></noscript></div>
</body>
</html>
`;
}
