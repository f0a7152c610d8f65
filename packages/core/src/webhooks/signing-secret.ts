import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { RandomBytes } from '../clock.js';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/**
 * A signing secret: `whsec_` + 32 CSPRNG bytes as lowercase hex. Hex, not base64, so a
 * double-click selects the whole secret and no character needs escaping anywhere.
 */
export function mintWebhookSecret(randomBytes: RandomBytes): string {
  return WEBHOOK_SECRET_PREFIX + Buffer.from(randomBytes(32)).toString('hex');
}

/** The bytes a secret of the host's may decode to, after `whsec_` (the Standard Webhooks key). */
export const WEBHOOK_SECRET_BYTES = Object.freeze({ min: 24, max: 64 });

/**
 * Why `value` is not a signing secret keyhook can take from a host, or null when it is:
 * `whsec_` and base64 (padding optional) of 24 to 64 bytes, as Svix and other Standard Webhooks
 * senders issue them; keyhook's own hex secrets are base64 too (docs/decisions.md §6.1).
 */
export function webhookSecretProblem(value: string): string | null {
  if (!value.startsWith(WEBHOOK_SECRET_PREFIX)) return `must start with ${WEBHOOK_SECRET_PREFIX}`;
  const encoded = value.slice(WEBHOOK_SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.replace(/=+$/, '').length % 4 === 1)
    return `must be ${WEBHOOK_SECRET_PREFIX} followed by base64`;
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.toString('base64').replace(/=+$/, '') !== encoded.replace(/=+$/, ''))
    return `must be ${WEBHOOK_SECRET_PREFIX} followed by base64`;
  if (bytes.length < WEBHOOK_SECRET_BYTES.min || bytes.length > WEBHOOK_SECRET_BYTES.max)
    return `must decode to ${WEBHOOK_SECRET_BYTES.min} to ${WEBHOOK_SECRET_BYTES.max} bytes after ${WEBHOOK_SECRET_PREFIX} (this one has ${bytes.length})`;
  return null;
}

/** An ed25519 signing key (docs/decisions.md §6.10): `whsk_` and base64 of its 32-byte seed. */
export const ED25519_SECRET_KEY_PREFIX = 'whsk_';
/** Its public key, which receivers verify `v1a` with: `whpk_` and base64 of its 32 bytes. */
export const ED25519_PUBLIC_KEY_PREFIX = 'whpk_';

/** How an endpoint's deliveries are signed: a shared HMAC secret, or an ed25519 key pair. */
export type WebhookKeyType = 'hmac' | 'ed25519';

// RFC 8410: the DER of an ed25519 private key in PKCS #8 is this prefix and the 32-byte seed.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The key object of a `whsk_…` secret key, for node:crypto's `sign`. */
export function ed25519PrivateKey(secretKey: string): KeyObject {
  const seed = Buffer.from(secretKey.slice(ED25519_SECRET_KEY_PREFIX.length), 'base64');
  if (!secretKey.startsWith(ED25519_SECRET_KEY_PREFIX) || seed.length !== 32) {
    throw new TypeError('keyhook: an ed25519 secret key is whsk_ and base64 of 32 bytes');
  }
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/**
 * A new ed25519 key pair: `whsk_` and base64 of 32 CSPRNG bytes (the seed, RFC 8032), and its
 * `whpk_` public key, as the Standard Webhooks specification serialises them.
 */
export function mintEd25519KeyPair(randomBytes: RandomBytes): { secretKey: string; publicKey: string } {
  const secretKey = ED25519_SECRET_KEY_PREFIX + Buffer.from(randomBytes(32)).toString('base64');
  return { secretKey, publicKey: ed25519PublicKeyOf(secretKey) };
}

/** The `whpk_…` public key of a `whsk_…` secret key. */
export function ed25519PublicKeyOf(secretKey: string): string {
  const spki = createPublicKey(ed25519PrivateKey(secretKey)).export({ format: 'der', type: 'spki' });
  // An ed25519 SubjectPublicKeyInfo ends with the 32 bytes of the key.
  return ED25519_PUBLIC_KEY_PREFIX + spki.subarray(spki.length - 32).toString('base64');
}
