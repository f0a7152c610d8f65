import { MAX_HEADER_ENTRIES, MAX_HEADER_LENGTH, SIGNATURE_HEADER } from './constants.js';
import { WebhookVerificationError } from './errors.js';

/** What a framework hands over: Node gives `string | string[] | undefined`, `Headers.get` gives `string | null`. */
export type SignatureHeaderValue = string | readonly string[] | null | undefined;

export interface ParsedSignatureHeader {
  /** Unix seconds, as signed. */
  timestamp: number;
  /** Every `v1` signature, 32 bytes each, in header order (several during a secret rotation). */
  signatures: Uint8Array[];
}

/** The header as the verifiers read it: each `v1` as its 64 hex characters, either case. */
export interface SignatureHeaderText {
  timestamp: number;
  signatures: string[];
}

// Canonical decimal only: no sign, exponent, fraction or leading zero, so `t` has one spelling.
const TIMESTAMP = /^[1-9][0-9]{0,15}$/;
const V1 = /^[0-9a-fA-F]{64}$/;
// What keyhook sends outside a rotation, `t=<digits>,v1=<64 hex>`, is read in one pass by
// canonicalHeader(); anything else takes the general path, which gives the same result for it.
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = i;
  HEX_VALUE['0123456789ABCDEF'.charCodeAt(i)] = i;
}

/**
 * Parses `t=<unix seconds>,v1=<hex>[,v1=<hex>…]` (docs/http-api.md §6.4). Entries may come in any
 * order with spaces or tabs around them and around `=`; unknown schemes (`v0=`) are ignored.
 * Anything else odd is `malformed_header`; an absent or blank header is `missing_signature`.
 * `headerName` only names the header in error messages.
 */
export function parseSignatureHeader(
  value: SignatureHeaderValue,
  headerName: string = SIGNATURE_HEADER,
): ParsedSignatureHeader {
  const { timestamp, signatures } = readSignatureHeader(value, headerName);
  return { timestamp, signatures: signatures.map(hexToBytes) };
}

/** `parseSignatureHeader` with the signatures left as validated hex: what verify compares. */
export function readSignatureHeader(
  value: SignatureHeaderValue,
  headerName: string = SIGNATURE_HEADER,
): SignatureHeaderText {
  if (typeof value === 'string') {
    const canonical = canonicalHeader(value);
    if (canonical) return canonical;
  }
  const header = joinHeader(value);
  // The length first, so no step below ever walks more than MAX_HEADER_LENGTH characters.
  const malformed = (reason: string) =>
    new WebhookVerificationError('malformed_header', `the ${headerName} header is malformed: ${reason}`);
  if (header.length > MAX_HEADER_LENGTH) throw malformed(`it is longer than ${MAX_HEADER_LENGTH} characters`);
  if (trimOws(header) === '') {
    throw new WebhookVerificationError('missing_signature', `the ${headerName} header is missing`);
  }
  // The split limit bounds the work before the count is checked.
  const entries = header.split(',', MAX_HEADER_ENTRIES + 1);
  if (entries.length > MAX_HEADER_ENTRIES) throw malformed(`it has more than ${MAX_HEADER_ENTRIES} entries`);

  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index]!;
    const equals = entry.indexOf('=');
    const key = equals === -1 ? '' : trimOws(entry.slice(0, equals));
    if (key === '') throw malformed(`entry ${index + 1} is not key=value`);
    const text = trimOws(entry.slice(equals + 1));
    if (key === 't') {
      if (timestamp !== undefined) throw malformed('it has more than one t');
      const seconds = Number(text);
      if (!TIMESTAMP.test(text) || !Number.isSafeInteger(seconds)) {
        throw malformed('t must be positive unix seconds in decimal digits');
      }
      timestamp = seconds;
    } else if (key === 'v1') {
      // A short, long or non-hex v1 cannot be an HMAC-SHA256: that is a broken header, not a wrong key.
      if (!V1.test(text)) throw malformed('v1 must be 64 hexadecimal characters');
      signatures.push(text);
    }
  }
  if (timestamp === undefined) throw malformed('it has no t');
  if (signatures.length === 0) throw malformed('it has no v1 signature');
  return { timestamp, signatures };
}

function joinHeader(value: SignatureHeaderValue): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  // Repeated headers: the entries of all of them, as Node itself joins repeated custom headers.
  if (Array.isArray(value)) return value.join(',');
  throw new TypeError(`the signature header must be a string, got ${typeof value}`);
}

// HTTP optional whitespace is spaces and tabs only (RFC 9110 §5.6.3).
function trimOws(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && (text[start] === ' ' || text[start] === '\t')) start++;
  while (end > start && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
  return text.slice(start, end);
}

/** `t=<1–16 digits, no leading zero>,v1=<64 hex>` exactly, or undefined for the general path. */
function canonicalHeader(header: string): SignatureHeaderText | undefined {
  const comma = header.indexOf(',');
  const digits = comma - 2;
  if (header.length !== comma + 4 + 64 || digits < 1 || digits > 16) return undefined;
  if (header.charCodeAt(0) !== 116 || header.charCodeAt(1) !== 61 || header.charCodeAt(2) === 48)
    return undefined;
  if (
    header.charCodeAt(comma + 1) !== 118 ||
    header.charCodeAt(comma + 2) !== 49 ||
    header.charCodeAt(comma + 3) !== 61
  )
    return undefined;
  let timestamp = 0;
  for (let i = 2; i < comma; i++) {
    const digit = header.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return undefined;
    timestamp = timestamp * 10 + digit;
  }
  if (!Number.isSafeInteger(timestamp)) return undefined;
  for (let at = comma + 4; at < header.length; at++) {
    if ((HEX_VALUE[header.charCodeAt(at)] ?? -1) < 0) return undefined;
  }
  return { timestamp, signatures: [header.slice(comma + 4)] };
}

// Called only on text that was checked as 64 hex digits.
function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = (nibble(hex.charCodeAt(2 * i)) << 4) | nibble(hex.charCodeAt(2 * i + 1));
  }
  return bytes;
}

function nibble(code: number): number {
  // '0'-'9' are 48-57; 'A'-'F' and 'a'-'f' map to 10-15 once the lowercase bit (32) is set.
  return code <= 57 ? code - 48 : (code | 32) - 87;
}
