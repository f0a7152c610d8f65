import { CONFIG_ELEMENT_ID, type PortalPageConfig } from '../src/page-config.js';

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

/** WCAG relative luminance: black text wins when (L + 0.05) / 0.05 > 1.05 / (L + 0.05). */
export function contrastsMoreWithBlack(hex: string): boolean {
  const digits = hex.length === 4 ? [...hex.slice(1)].map((d) => d + d).join('') : hex.slice(1);
  const [r, g, b] = [0, 2, 4].map((at) => {
    const channel = Number.parseInt(digits.slice(at, at + 2), 16) / 255;
    return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  const luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  return (luminance + 0.05) / 0.05 > 1.05 / (luminance + 0.05);
}
