/*
 * What the server hands the browser app through the page, shared by both sides: the page
 * writes it (page-html.ts), the app reads it (app/page-config-reader.ts). Data in a
 * `<script type="application/json">` block, which CSP does not run.
 */

/** The id of the page's config block. */
export const CONFIG_ELEMENT_ID = 'keyhook-portal-config';

/** The config block's JSON. */
export interface PortalPageConfig {
  /** The portal's path as the browser sees it: the app calls `${basePath}/api/…`. */
  basePath: string;
  brand: {
    /** Null when the host gave no brand. */
    name: string | null;
    logoUrl: string | null;
    accentColor: string | null;
  };
}
