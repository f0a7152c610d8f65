import { MAX_HEADER_ENTRIES, MAX_HEADER_LENGTH, PUBLIC_KEY_PREFIX, SECRET_PREFIX } from './constants.js';
import { WebhookVerificationError } from './errors.js';
import type { SignatureHeaderText, SignatureHeaderValue } from './signature-header.js';

// The Standard Webhooks scheme (standardwebhooks.com): three headers, a signature over
// `<webhook-id>.<webhook-timestamp>.<body>`, base64 digests, keyed with the secret's base64 part.

/** The Standard Webhooks headers; fixed by that specification, so no option renames them. */
export const STANDARD_WEBHOOKS_HEADERS = Object.freeze({
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
});

/** The header values of a Standard Webhooks delivery, as read from the request. */
export interface StandardWebhooksHeaderValues {
  id: SignatureHeaderValue;
  timestamp: SignatureHeaderValue;
  signature: SignatureHeaderValue;
}

/**
 * A delivery's id, `t`, each `v1` as 64 hex digits (so the comparison is the keyhook scheme's), and
 * each `v1a` as its 64 bytes.
 */
export interface StandardWebhooksHeaderText extends SignatureHeaderText {
  id: string;
  asymmetricSignatures: Uint8Array[];
}

const TIMESTAMP = /^[1-9][0-9]{0,15}$/;
// An HMAC-SHA256 digest in padded base64: 43 characters and one `=`.
const V1 = /^[A-Za-z0-9+/]{43}=$/;
// An ed25519 signature in padded base64: 64 bytes are 86 characters and two `=`.
const V1A = /^[A-Za-z0-9+/]{86}==$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Reads the three headers; the same error codes as keyhook's header, for the same faults. */
export function readStandardWebhooksHeaders(
  values: StandardWebhooksHeaderValues,
): StandardWebhooksHeaderText {
  const { id: idName, timestamp: timestampName, signature: signatureName } = STANDARD_WEBHOOKS_HEADERS;
  const malformed = (name: string, reason: string) =>
    new WebhookVerificationError('malformed_header', `the ${name} header is malformed: ${reason}`);
  const signature = joinHeader(values.signature, signatureName);
  if (signature.length > MAX_HEADER_LENGTH) {
    throw malformed(signatureName, `it is longer than ${MAX_HEADER_LENGTH} characters`);
  }
  if (signature.trim() === '') {
    throw new WebhookVerificationError('missing_signature', `the ${signatureName} header is missing`);
  }
  const id = single(values.id, idName);
  if (id === '') throw malformed(idName, 'it is blank');
  const timestampText = single(values.timestamp, timestampName);
  const timestamp = Number(timestampText);
  if (!TIMESTAMP.test(timestampText) || !Number.isSafeInteger(timestamp)) {
    throw malformed(timestampName, 'it must be positive unix seconds in decimal digits');
  }
  // Space-delimited `<version>,<base64>` entries (several during a rotation); other versions ignored.
  const entries = signature.split(' ', MAX_HEADER_ENTRIES + 1).filter((entry) => entry !== '');
  if (entries.length > MAX_HEADER_ENTRIES) {
    throw malformed(signatureName, `it has more than ${MAX_HEADER_ENTRIES} entries`);
  }
  const signatures: string[] = [];
  const asymmetricSignatures: Uint8Array[] = [];
  for (const entry of entries) {
    const comma = entry.indexOf(',');
    if (comma <= 0) throw malformed(signatureName, 'each entry must be <version>,<signature>');
    const version = entry.slice(0, comma);
    const text = entry.slice(comma + 1);
    if (version === 'v1') {
      if (!V1.test(text)) throw malformed(signatureName, 'v1 must be a base64 HMAC-SHA256 of 44 characters');
      signatures.push(base64ToHex(text));
    } else if (version === 'v1a') {
      if (!V1A.test(text))
        throw malformed(signatureName, 'v1a must be a base64 ed25519 signature of 88 characters');
      asymmetricSignatures.push(base64ToBytes(text));
    }
  }
  if (signatures.length === 0 && asymmetricSignatures.length === 0) {
    throw malformed(signatureName, 'it has no v1 or v1a signature');
  }
  return { id, timestamp, signatures, asymmetricSignatures };
}

function joinHeader(value: SignatureHeaderValue, name: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  // A repeated webhook-signature is its entries joined, as the header's own delimiter does.
  if (Array.isArray(value)) return value.join(' ');
  throw new TypeError(`the ${name} header must be a string, got ${typeof value}`);
}

function single(value: SignatureHeaderValue, name: string): string {
  if (value === undefined || value === null) {
    throw new WebhookVerificationError('malformed_header', `the ${name} header is missing`);
  }
  if (Array.isArray(value)) {
    throw new WebhookVerificationError('malformed_header', `the ${name} header is repeated`);
  }
  if (typeof value !== 'string') throw new TypeError(`the ${name} header must be a string`);
  return value.trim();
}

/**
 * The HMAC key of a secret: the base64 after `whsec_`, decoded, as the Standard Webhooks libraries
 * read it. keyhook's secrets are 64 hex digits, which are base64 too, so the key is 48 bytes.
 */
export function standardWebhooksKey(secret: string): Uint8Array {
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!BASE64.test(encoded) || encoded.length % 4 === 1) {
    throw new TypeError(
      `for Standard Webhooks the secret must be ${SECRET_PREFIX} followed by base64, as keyhook's secrets are`,
    );
  }
  return Uint8Array.from(atob(encoded), (char) => char.charCodeAt(0));
}

/** The 32 bytes of a `whpk_…` public key; a TypeError for anything else, as for a bad secret. */
export function publicKeyBytes(publicKey: string): Uint8Array {
  const encoded = publicKey.slice(PUBLIC_KEY_PREFIX.length);
  if (!/^[A-Za-z0-9+/]{43}=?$/.test(encoded)) {
    throw new TypeError(`a public key must be ${PUBLIC_KEY_PREFIX} followed by base64 of 32 bytes`);
  }
  return base64ToBytes(encoded);
}

/** The text signed before the body: `<id>.<t>.` */
export function standardWebhooksPrefix(id: string, timestamp: number): string {
  return `${id}.${timestamp}.`;
}

/** The `webhook-signature` value for digests given as hex, one `v1` each, space-separated. */
export function standardSignatureHeaderText(digestsHex: readonly string[]): string {
  return digestsHex.map((hex) => `v1,${hexToBase64(hex)}`).join(' ');
}

const HEX_DIGITS = '0123456789abcdef';

function base64ToHex(text: string): string {
  const binary = atob(text);
  let hex = '';
  for (let i = 0; i < binary.length; i++) {
    const byte = binary.charCodeAt(i);
    hex += HEX_DIGITS[byte >> 4]! + HEX_DIGITS[byte & 15]!;
  }
  return hex;
}

function base64ToBytes(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
}

function hexToBase64(hex: string): string {
  let binary = '';
  for (let i = 0; i < hex.length; i += 2)
    binary += String.fromCharCode(Number.parseInt(hex.slice(i, i + 2), 16));
  return btoa(binary);
}
