import { createPublicKey, type KeyObject } from 'node:crypto';
import { createRemoteJWKSet, type JWTPayload, type JWTVerifyGetKey, jwtVerify } from 'jose';
import type { Clock } from '../clock.js';
import type { KeyGrant } from '../keys/key-grant.js';
import { HOW_TO_MAKE, isBlank, missingOption } from '../required-options.js';
import { isStorableText } from '../validation.js';

/** Exactly one of `secret`, `publicKey` or `jwksUrl` (docs/decisions.md §2.1). */
export interface AdminSessionOptions {
  /** HS256 shared secret (at least 32 bytes). */
  secret?: string | Uint8Array;
  /** An SPKI PEM public key; RS256, PS256, ES256/384/512 or EdDSA by key type. */
  publicKey?: string;
  /** A JWKS document; cached, and fetched again once when a token names an unknown `kid`. */
  jwksUrl?: string | URL;
  /**
   * At most one JWKS fetch per this many seconds, however many unknown `kid`s arrive.
   * Default 30: a portal's new signing key is picked up on its first token after that.
   */
  jwksCooldownSeconds?: number;
  /** Overrides the allow-list; `none` is never accepted. */
  algorithms?: string[];
  issuer?: string;
  audience?: string | string[];
  /** The claim that carries the tenant id. Default `tenant_id`. */
  tenantClaim?: string;
  /** Seconds of leeway for `exp`/`nbf` (and `iat` when `maxTokenLifetimeSeconds` is set). Default 0. */
  clockToleranceSeconds?: number;
  /**
   * The longest lifetime, in seconds, a token may have. When set, a token needs `iat`, its
   * `exp - iat` may not exceed this, and its `iat` may not lie in the future (beyond the clock
   * tolerance); anything else is refused like any other bad token. Default: no maximum, so a
   * portal's long-lived tokens keep working unless you opt in.
   */
  maxTokenLifetimeSeconds?: number;
}

export interface AdminSession {
  tenantId: string;
  subject: string;
  claims: JWTPayload;
  /** What keys made or changed under this session may be given: a portal session's caps (docs/decisions.md §22.5). */
  grant?: KeyGrant | undefined;
}

/** Why a token was refused: for the log only, never for the client. */
export class AdminSessionRejected extends Error {
  override readonly name = 'AdminSessionRejected';
}

export type AdminSessionVerifier = (token: string) => Promise<AdminSession>;

const SYMMETRIC = new Set(['HS256', 'HS384', 'HS512']);

export function createAdminSessionVerifier(given: AdminSessionOptions, clock: Clock): AdminSessionVerifier {
  if (isBlank(given)) throw missingOption('adminSession', HOW_TO_MAKE.adminSession);
  // An empty value is a missing one (an unset variable passed through as `SECRET=`).
  const options: AdminSessionOptions = {
    ...given,
    secret: isBlank(given.secret) ? undefined : given.secret,
    publicKey: isBlank(given.publicKey) ? undefined : given.publicKey,
    jwksUrl: isBlank(given.jwksUrl) ? undefined : given.jwksUrl,
  };
  const sources = [options.secret, options.publicKey, options.jwksUrl].filter((s) => s !== undefined);
  if (sources.length === 0) {
    throw missingOption(
      'adminSession.jwksUrl, adminSession.publicKey or adminSession.secret',
      HOW_TO_MAKE.adminSession,
    );
  }
  if (sources.length > 1) {
    throw new TypeError('admin session: configure exactly one of secret, publicKey or jwksUrl');
  }
  const tenantClaim = options.tenantClaim ?? 'tenant_id';
  const maxLifetime = options.maxTokenLifetimeSeconds;
  if (maxLifetime !== undefined && !(Number.isFinite(maxLifetime) && maxLifetime > 0)) {
    throw new TypeError('admin session: maxTokenLifetimeSeconds must be a positive number of seconds');
  }
  const algorithms = resolveAlgorithms(options);
  const key = resolveKey(options);

  return async (token) => {
    let payload: JWTPayload;
    try {
      const verifyOptions = {
        algorithms,
        requiredClaims: ['exp', 'sub', tenantClaim],
        currentDate: clock.now(),
        clockTolerance: options.clockToleranceSeconds ?? 0,
        ...(options.issuer !== undefined && { issuer: options.issuer }),
        ...(options.audience !== undefined && { audience: options.audience }),
        // jose then requires `iat`, and refuses one in the future or older than the maximum.
        ...(maxLifetime !== undefined && { maxTokenAge: maxLifetime }),
      };
      ({ payload } =
        typeof key === 'function'
          ? await jwtVerify(token, key, verifyOptions)
          : await jwtVerify(token, key, verifyOptions));
    } catch (error) {
      throw new AdminSessionRejected(
        error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      );
    }
    if (maxLifetime !== undefined) {
      // jose has checked that both are numbers: `iat` through maxTokenAge, `exp` as required.
      const lifetime = (payload.exp as number) - (payload.iat as number);
      if (lifetime > maxLifetime) {
        throw new AdminSessionRejected(
          `token lifetime ${lifetime}s (exp - iat) exceeds maxTokenLifetimeSeconds ${maxLifetime}s`,
        );
      }
    }
    const tenantId = payload[tenantClaim];
    if (typeof tenantId !== 'string' || tenantId.length === 0 || tenantId.length > 200) {
      throw new AdminSessionRejected(`claim ${tenantClaim} is not a non-empty string`);
    }
    // A tenant id is stored with every key and webhook: one no store can keep is no tenant.
    if (!isStorableText(tenantId)) {
      throw new AdminSessionRejected(`claim ${tenantClaim} holds U+0000 or an unpaired surrogate`);
    }
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) {
      throw new AdminSessionRejected('claim sub is not a non-empty string');
    }
    return { tenantId, subject: payload.sub, claims: payload };
  };
}

type VerifyKey = Uint8Array | KeyObject | JWTVerifyGetKey;

const PUBLIC_KEY_FAMILIES: Record<string, RegExp> = {
  RS256: /^RS(256|384|512)$/,
  PS256: /^PS(256|384|512)$/,
  ES256: /^ES256$/,
  ES384: /^ES384$/,
  ES512: /^ES512$/,
  EdDSA: /^(EdDSA|Ed25519)$/,
};

/** The allow-list, checked at start-up so a bad configuration fails before any request. */
function resolveAlgorithms(options: AdminSessionOptions): string[] {
  const requested = options.algorithms;
  if (requested && (requested.length === 0 || requested.some((alg) => alg.toLowerCase() === 'none'))) {
    throw new TypeError('admin session: algorithms must be a non-empty list without "none"');
  }
  if (options.secret !== undefined) {
    const secret =
      typeof options.secret === 'string' ? new TextEncoder().encode(options.secret) : options.secret;
    if (secret.byteLength < 32)
      throw new TypeError('admin session: the HS256 secret must be at least 32 bytes');
    const algorithms = requested ?? ['HS256'];
    if (algorithms.some((alg) => !SYMMETRIC.has(alg))) {
      throw new TypeError('admin session: a secret verifies HS256/HS384/HS512 only');
    }
    return algorithms;
  }
  if (requested?.some((alg) => SYMMETRIC.has(alg))) {
    // HS/RS confusion: a public key must never be usable as an HMAC secret.
    throw new TypeError('admin session: HMAC algorithms need a secret, not a public key');
  }
  if (options.publicKey !== undefined) {
    // Parsing here also refuses a bad PEM at start-up rather than on the first request.
    const detected = algorithmForKey(options.publicKey);
    const algorithms = requested ?? [detected];
    if (algorithms.some((alg) => !PUBLIC_KEY_FAMILIES[detected]!.test(alg))) {
      throw new TypeError(`admin session: this public key verifies ${detected}-family algorithms only`);
    }
    return algorithms;
  }
  return requested ?? ['RS256', 'PS256', 'ES256', 'EdDSA'];
}

function resolveKey(options: AdminSessionOptions): VerifyKey {
  if (options.secret !== undefined) {
    return typeof options.secret === 'string' ? new TextEncoder().encode(options.secret) : options.secret;
  }
  if (options.publicKey !== undefined) return createPublicKey(options.publicKey);
  return createRemoteJWKSet(new URL(String(options.jwksUrl)), {
    cooldownDuration: (options.jwksCooldownSeconds ?? 30) * 1000,
    cacheMaxAge: 600_000,
    timeoutDuration: 5000,
  });
}

function algorithmForKey(pem: string): string {
  const key = createPublicKey(pem);
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return 'RS256';
    case 'rsa-pss':
      return 'PS256';
    case 'ed25519':
      return 'EdDSA';
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'prime256v1') return 'ES256';
      if (curve === 'secp384r1') return 'ES384';
      if (curve === 'secp521r1') return 'ES512';
      throw new TypeError(`admin session: unsupported EC curve ${curve}`);
    }
    default:
      throw new TypeError(`admin session: unsupported public key type ${key.asymmetricKeyType}`);
  }
}
