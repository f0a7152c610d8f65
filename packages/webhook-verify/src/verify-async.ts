import { matchesAny, toHex } from './compare.js';
import type { SignatureHeaderValue } from './header.js';
import type { WebhookEvent } from './payload.js';
import {
  finishVerification,
  prepareVerification,
  type VerifyOptions,
  type WebhookSecret,
} from './verification.js';

const encoder = new TextEncoder();

/**
 * Verifies a delivery with WebCrypto (`crypto.subtle`), for Deno, Bun, Workers, browsers and Node.
 * Same rules, errors and result as `verify`.
 */
export async function verifyAsync<TData = Record<string, unknown>>(
  rawBody: string | Uint8Array,
  signatureHeader: SignatureHeaderValue,
  secret: WebhookSecret,
  options: VerifyOptions = {},
): Promise<WebhookEvent<TData>> {
  const prepared = prepareVerification(rawBody, signatureHeader, secret, options);
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) throw new TypeError('crypto.subtle is not available in this runtime');
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : rawBody;
  const prefix = encoder.encode(`${prepared.timestamp}.`);
  const message = new Uint8Array(prefix.length + body.length);
  message.set(prefix);
  message.set(body, prefix.length);
  const digests = await Promise.all(
    (typeof prepared.secrets === 'string' ? [prepared.secrets] : prepared.secrets).map(async (secretText) => {
      const key = await subtle.importKey(
        'raw',
        encoder.encode(secretText),
        { name: 'HMAC', hash: 'SHA-256' },
        false,
        ['sign'],
      );
      return toHex(new Uint8Array(await subtle.sign('HMAC', key, message)));
    }),
  );
  let matched = false;
  // Every secret's digest against every v1, with no early exit (spec §6 rule 4).
  for (const digest of digests) matched = matchesAny(digest, prepared.signatures) || matched;
  return finishVerification<TData>(matched, prepared, rawBody);
}
