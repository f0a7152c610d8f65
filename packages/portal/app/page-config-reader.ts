import { CONFIG_ELEMENT_ID, type PortalPageConfig } from '../src/page-config.js';
import { contrastsMoreWithBlack } from './accent-contrast.js';

/** The config the server wrote into the page (src/page-html.ts). */
export function readPageConfig(): PortalPageConfig {
  const element = document.getElementById(CONFIG_ELEMENT_ID);
  return JSON.parse(element?.textContent ?? 'null') as PortalPageConfig;
}

/**
 * The accent colour, through CSSOM (CSP allows it; a style attribute in the page would not be),
 * with the text colour that reads better on it: black or white, whichever contrasts more.
 */
export function applyAccent(color: string | null): void {
  if (!color) return;
  const root = document.documentElement.style;
  root.setProperty('--accent', color);
  root.setProperty('--accent-text', contrastsMoreWithBlack(color) ? '#000000' : '#ffffff');
}
