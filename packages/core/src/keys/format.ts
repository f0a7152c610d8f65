import { crc32 } from 'node:zlib';
import type { RandomBytes } from '../clock.js';

export const KEY_PREFIX = 'sk_live_';
export const KEY_ID_HEX_LENGTH = 16; // docs/http-api.md §8
export const KEY_SECRET_HEX_LENGTH = 48; // docs/http-api.md §8
/** A CRC32 in base62, zero-padded: 62^6 > 2^32. */
export const CHECKSUM_LENGTH = 6;

/** How keys look: their prefix, and whether a checksum ends them. */
export interface ApiKeyFormat {
  /** Lowercase letters, digits and single underscores, ending in `_`: `acme_live_`. At most 24 characters. */
  prefix: string;
  /**
   * Six base62 characters after the secret part: the CRC32 of everything before them, as
   * GitHub's tokens carry one. A mistyped key is refused without a store read, and a secret
   * scanner can tell a key from random text. Default false.
   */
  checksum?: boolean;
}

/** The default format (docs/http-api.md §5.2): `sk_live_<16 hex>_<48 hex>`, no checksum. */
export const SPEC_KEY_FORMAT: Readonly<Required<ApiKeyFormat>> = { prefix: KEY_PREFIX, checksum: false };

const PREFIX = /^[a-z][a-z0-9_]{0,22}_$/;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export interface ParsedApiKey {
  /** `<prefix><16 hex>`: the part that is stored and shown. */
  keyLookup: string;
  keyIdHex: string;
}

export interface MintedApiKey {
  keyLookup: string;
  /** The full key: shown once, never stored. */
  secret: string;
}

interface CompiledFormat {
  prefix: string;
  checksum: boolean;
  /** Anchored: the whole presented string. */
  exact: RegExp;
  /** Anchored: a whole lookup id of this format. */
  lookup: RegExp;
  /** For secret scanners: a key anywhere in a text. */
  scan: string;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** CRC32 of `body` as six base62 characters. */
export function keyChecksum(body: string): string {
  let value = crc32(body);
  let text = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    text = BASE62[value % 62]! + text;
    value = Math.floor(value / 62);
  }
  return text;
}

function hex(random: RandomBytes, chars: number): string {
  return Buffer.from(random(chars / 2)).toString('hex');
}

/**
 * The key formats of one keyhook: the one new keys are minted in, and the others verification
 * still accepts (keys minted before a change of prefix or checksum).
 */
export class ApiKeyFormats {
  private readonly minting: CompiledFormat;
  private readonly all: CompiledFormat[];

  constructor(mint: ApiKeyFormat = SPEC_KEY_FORMAT, accepted: readonly ApiKeyFormat[] = []) {
    this.minting = compile(mint, 'keyFormat');
    this.all = [this.minting];
    for (const [index, format] of accepted.entries()) {
      const compiled = compile(format, `acceptedKeyFormats[${index}]`);
      if (this.all.some((known) => known.prefix === compiled.prefix)) {
        throw new TypeError(`keyhook: the key prefix ${JSON.stringify(compiled.prefix)} is configured twice`);
      }
      this.all.push(compiled);
    }
  }

  /** A new key in the minting format. */
  mint(random: RandomBytes, keyIdHex = hex(random, KEY_ID_HEX_LENGTH)): MintedApiKey {
    return this.mintAs(this.minting, `${this.minting.prefix}${keyIdHex}`, random);
  }

  /**
   * Rotation keeps the lookup id, prefix included, and mints a new secret part in the format
   * that lookup id belongs to: the one whose prefix and 16 hex digits make up the whole of it
   * (with `acme_` and `acme_live_` both configured, `acme_live_…` is the second's). Null when
   * no configured format has it: a key of a retired format would rotate into one no
   * verification accepts.
   */
  remint(random: RandomBytes, keyLookup: string): MintedApiKey | null {
    const format = this.all.find((known) => known.lookup.test(keyLookup));
    return format ? this.mintAs(format, keyLookup, random) : null;
  }

  /** The lookup id of a well-formed key, with a matching checksum where its format has one; else null. */
  parse(presented: string): ParsedApiKey | null {
    for (const format of this.all) {
      const match = format.exact.exec(presented);
      if (!match) continue;
      if (format.checksum) {
        const body = presented.slice(0, -CHECKSUM_LENGTH);
        if (keyChecksum(body) !== presented.slice(-CHECKSUM_LENGTH)) return null;
      }
      return { keyLookup: `${format.prefix}${match[1]}`, keyIdHex: match[1]! };
    }
    return null;
  }

  /** Each format with the regular expression a secret scanner can look for it with. */
  describe(): { prefix: string; checksum: boolean; pattern: string }[] {
    return this.all.map(({ prefix, checksum, scan }) => ({ prefix, checksum, pattern: scan }));
  }

  private mintAs(format: CompiledFormat, keyLookup: string, random: RandomBytes): MintedApiKey {
    const body = `${keyLookup}_${hex(random, KEY_SECRET_HEX_LENGTH)}`;
    return { keyLookup, secret: format.checksum ? `${body}${keyChecksum(body)}` : body };
  }
}

function compile(format: ApiKeyFormat, option: string): CompiledFormat {
  const prefix = format?.prefix;
  if (typeof prefix !== 'string' || !PREFIX.test(prefix) || prefix.includes('__')) {
    throw new TypeError(
      `keyhook: ${option}.prefix must be lowercase letters, digits and single underscores, start with a letter, end with "_" and be at most 24 characters, like "acme_live_" (got ${JSON.stringify(prefix)})`,
    );
  }
  const checksum = format.checksum === true;
  const tail = checksum ? `[0-9A-Za-z]{${CHECKSUM_LENGTH}}` : '';
  const id = `[0-9a-f]{${KEY_ID_HEX_LENGTH}}`;
  const rest = `_[0-9a-f]{${KEY_SECRET_HEX_LENGTH}}${tail}`;
  return {
    prefix,
    checksum,
    exact: new RegExp(`^${escapeRegExp(prefix)}(${id})${rest}$`),
    lookup: new RegExp(`^${escapeRegExp(prefix)}${id}$`),
    scan: `\\b${escapeRegExp(prefix)}${id}${rest}\\b`,
  };
}

const spec = new ApiKeyFormats();

/** The default format alone: for code that has no keyhook at hand. */
export function parseApiKey(presented: string): ParsedApiKey | null {
  return spec.parse(presented);
}

export function mintApiKey(random: RandomBytes, keyIdHex?: string): MintedApiKey {
  return spec.mint(random, keyIdHex);
}

export function remintApiKey(random: RandomBytes, keyLookup: string): MintedApiKey | null {
  return spec.remint(random, keyLookup);
}
