import { createHmac } from 'node:crypto';
import { matchesAny } from './compare.js';
import type { SignatureHeaderValue } from './header.js';
import type { WebhookEvent } from './payload.js';
import {
  checkSignatureAndTime,
  finishVerification,
  type PreparedVerification,
  prepareVerification,
  type VerifyOptions,
  type WebhookSecret,
} from './verification.js';

/**
 * Verifies a delivery with node:crypto, synchronously, and returns its event. Throws a
 * `WebhookVerificationError` for a delivery that must be refused (spec §6 "Signature").
 */
export function verify<TData = Record<string, unknown>>(
  rawBody: string | Uint8Array,
  signatureHeader: SignatureHeaderValue,
  secret: WebhookSecret,
  options: VerifyOptions = {},
): WebhookEvent<TData> {
  const prepared = prepareVerification(rawBody, signatureHeader, secret, options);
  return finishVerification<TData>(signatureMatches(prepared, rawBody), prepared, rawBody);
}

/**
 * `verify` without reading the body as an event: the signature and the timestamp only. For a
 * receiver that parses the body its own way (a streaming parser, a schema library); it must
 * still parse the exact bytes it verified.
 */
export function verifySignature(
  rawBody: string | Uint8Array,
  signatureHeader: SignatureHeaderValue,
  secret: WebhookSecret,
  options: VerifyOptions = {},
): void {
  const prepared = prepareVerification(rawBody, signatureHeader, secret, options);
  checkSignatureAndTime(signatureMatches(prepared, rawBody), prepared);
}

function signatureMatches(prepared: PreparedVerification, rawBody: string | Uint8Array): boolean {
  const prefix = `${prepared.timestamp}.`;
  const digest = (key: string) =>
    // A string key is used as its UTF-8 bytes, `whsec_` included (DESIGN.md §6).
    createHmac('sha256', key).update(prefix).update(rawBody).digest('hex');
  const { secrets, signatures } = prepared;
  if (typeof secrets === 'string') return matchesAny(digest(secrets), signatures);
  let matched = false;
  // The call comes before `||`, so every secret is compared even after a match.
  for (const key of secrets) matched = matchesAny(digest(key), signatures) || matched;
  return matched;
}
