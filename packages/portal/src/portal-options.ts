/** How the portal looks to the host's customers. Every field is checked when `keyhookPortal()` runs. */
export interface PortalBrand {
  /** The host's name: in the page title, the header, and "Ask for a new link from <name>". */
  name: string;
  /** An `https:` URL, an `http:` URL on localhost, or a path on the host's own origin (`/logo.svg`). */
  logoUrl?: string | undefined;
  /** `#rgb` or `#rrggbb`: buttons and focus rings. Text on it is black or white, whichever reads better. */
  accentColor?: string | undefined;
  /** Left out: the viewer's system setting (`prefers-color-scheme`) decides. */
  theme?: 'light' | 'dark' | undefined;
}

/** `keyhookPortal()`'s options. */
export interface KeyhookPortalOptions {
  /**
   * Where the portal is served, from the same point as the adapter's `prefix` (`/portal`);
   * left out: the adapter's default, `${prefix}/portal`.
   */
  path?: string | undefined;
  /** Your name, logo, accent colour and theme; left out, a neutral page. */
  brand?: PortalBrand | undefined;
  /**
   * The CSP `frame-ancestors` sources: who may show the portal in an iframe (`'self'`,
   * `https://dashboard.example.com`). Default `["'none'"]`: nobody.
   */
  frameAncestors?: readonly string[] | undefined;
}

/** The options once checked: what the page is built from. */
export interface ResolvedPortalOptions {
  path: string | undefined;
  brand: {
    name: string | null;
    logoUrl: string | null;
    /** The logo's origin when it is not the page's own: the CSP's `img-src` names it. */
    logoOrigin: string | null;
    accentColor: string | null;
    theme: 'light' | 'dark' | null;
  };
  frameAncestors: readonly string[];
}

const HEX_COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
// A CSP source expression without a path: 'self', 'none', a scheme (`https:`) or a host with an
// optional scheme, wildcard subdomain and port. Anything else could end the directive early.
// 'self', 'none', or a host (a scheme, a leading `*.` and a port, `*` among them, allowed). Not `*`
// alone nor a bare scheme (`https:`): either lets any site frame the portal and click through it.
const FRAME_SOURCE =
  /^(?:'self'|'none'|(?:[a-z][a-z0-9+.-]*:\/\/)?(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::(?:\d{1,5}|\*))?)$/i;
const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
/** Whitespace, backslashes and control characters have no place in a logo's address. */
function hasUnsafeUrlText(value: string): boolean {
  return (
    /[\s\\]/.test(value) ||
    [...value].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)
  );
}

/** Checks every option; a bad one is a TypeError that names it, thrown at setup rather than per request. */
export function resolvePortalOptions(options: KeyhookPortalOptions): ResolvedPortalOptions {
  return {
    path: checkPath(options.path),
    brand: checkBrand(options.brand),
    frameAncestors: checkFrameAncestors(options.frameAncestors),
  };
}

function checkPath(path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  if (typeof path !== 'string' || !/^\/[A-Za-z0-9._~\-/]*$/.test(path) || path.includes('//')) {
    throw new TypeError(
      `keyhookPortal: path must be a path such as '/portal' (letters, digits, . _ ~ - and /); got ${JSON.stringify(path)}`,
    );
  }
  return path.length > 1 ? path.replace(/\/$/, '') : path;
}

function checkBrand(brand: PortalBrand | undefined): ResolvedPortalOptions['brand'] {
  if (brand === undefined) {
    return { name: null, logoUrl: null, logoOrigin: null, accentColor: null, theme: null };
  }
  if (typeof brand.name !== 'string' || brand.name.trim() === '' || brand.name.length > 100) {
    throw new TypeError('keyhookPortal: brand.name must be a name of 1 to 100 characters');
  }
  if (
    brand.accentColor !== undefined &&
    !(typeof brand.accentColor === 'string' && HEX_COLOR.test(brand.accentColor))
  ) {
    throw new TypeError(
      `keyhookPortal: brand.accentColor must be a hex colour, #rgb or #rrggbb; got ${JSON.stringify(brand.accentColor)}`,
    );
  }
  if (brand.theme !== undefined && brand.theme !== 'light' && brand.theme !== 'dark') {
    throw new TypeError(
      `keyhookPortal: brand.theme must be 'light' or 'dark'; got ${JSON.stringify(brand.theme)}`,
    );
  }
  const logo = brand.logoUrl === undefined ? null : checkLogoUrl(brand.logoUrl);
  return {
    name: brand.name.trim(),
    logoUrl: logo?.url ?? null,
    logoOrigin: logo?.origin ?? null,
    accentColor: brand.accentColor?.toLowerCase() ?? null,
    theme: brand.theme ?? null,
  };
}

function checkLogoUrl(value: string): { url: string; origin: string | null } {
  const refuse = (why: string) =>
    new TypeError(`keyhookPortal: brand.logoUrl ${why}; got ${JSON.stringify(value)}`);
  if (typeof value !== 'string' || value === '' || hasUnsafeUrlText(value)) {
    throw refuse('must be an https: URL or a path');
  }
  // A path on the host's own origin; `//host` would be another origin, so it is not a path.
  if (value.startsWith('/')) {
    if (value.startsWith('//')) throw refuse('must be an https: URL or a path, not a protocol-relative URL');
    return { url: value, origin: null };
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse('must be an https: URL or a path');
  }
  if (url.username !== '' || url.password !== '') throw refuse('must not carry credentials');
  const local = url.protocol === 'http:' && LOCAL_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !local) {
    throw refuse('must be an https: URL (http: only on localhost) or a path');
  }
  return { url: url.href, origin: url.origin };
}

function checkFrameAncestors(sources: readonly string[] | undefined): readonly string[] {
  if (sources === undefined) return ["'none'"];
  if (!Array.isArray(sources) || sources.length === 0) {
    throw new TypeError(
      "keyhookPortal: frameAncestors must list at least one source, or be left out for 'none'",
    );
  }
  for (const source of sources) {
    if (typeof source !== 'string' || !FRAME_SOURCE.test(source)) {
      throw new TypeError(
        `keyhookPortal: frameAncestors entries must be 'self', 'none' or an origin such as https://dashboard.example.com (not * nor a bare scheme, which would let any site frame the portal); got ${JSON.stringify(source)}`,
      );
    }
  }
  if (sources.includes("'none'") && sources.length > 1) {
    throw new TypeError("keyhookPortal: frameAncestors: 'none' stands alone");
  }
  return [...sources];
}
