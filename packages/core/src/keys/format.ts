import type { RandomBytes } from '../clock.js';

export const KEY_PREFIX = 'sk_live_';
export const KEY_ID_HEX_LENGTH = 16; // spec §8
export const KEY_SECRET_HEX_LENGTH = 48; // spec §8

/** The one anchored pattern for a full key (spec §5.2). */
export const API_KEY_PATTERN = /^sk_live_([0-9a-f]{16})_([0-9a-f]{48})$/;

export interface ParsedApiKey {
  /** `sk_live_<16 hex>`: the part that is stored and shown. */
  keyLookup: string;
  keyIdHex: string;
}

export function parseApiKey(presented: string): ParsedApiKey | null {
  const match = API_KEY_PATTERN.exec(presented);
  if (!match) return null;
  return { keyLookup: `${KEY_PREFIX}${match[1]}`, keyIdHex: match[1]! };
}

export interface MintedApiKey {
  keyLookup: string;
  /** The full key: shown once, never stored. */
  secret: string;
}

function hex(random: RandomBytes, chars: number): string {
  return Buffer.from(random(chars / 2)).toString('hex');
}

export function mintApiKey(random: RandomBytes, keyIdHex = hex(random, KEY_ID_HEX_LENGTH)): MintedApiKey {
  const keyLookup = `${KEY_PREFIX}${keyIdHex}`;
  return { keyLookup, secret: `${keyLookup}_${hex(random, KEY_SECRET_HEX_LENGTH)}` };
}

/** Rotation keeps the lookup id and mints a new secret part (DESIGN.md §3). */
export function remintApiKey(random: RandomBytes, keyLookup: string): MintedApiKey {
  return mintApiKey(random, keyLookup.slice(KEY_PREFIX.length));
}
