import { SignJWT } from 'jose';

export interface AdminTokenOptions {
  /** The HS256 secret your `adminSession.secret` holds (at least 32 bytes). */
  secret: string | Uint8Array;
  /** The tenant the token administers. */
  tenantId: string;
  /** Who holds the session. Default `dev-admin`. */
  subject?: string | undefined;
  /** Match `adminSession.issuer` / `.audience` when they are set: the verifier checks them. */
  issuer?: string | undefined;
  audience?: string | string[] | undefined;
  /** The claim that carries the tenant; match `adminSession.tenantClaim`. Default `tenant_id`. */
  tenantClaim?: string | undefined;
  /** Lifetime in seconds: 1 to 86,400 (a day). Default 3,600. */
  expiresInSeconds?: number | undefined;
  /** Issue time. Default now. */
  now?: Date | undefined;
}

export const MAX_ADMIN_TOKEN_SECONDS = 24 * 60 * 60;

/**
 * An admin-session JWT, HS256, as an admin portal would mint one: for development, scripts and
 * tests, so nobody hand-writes jose calls to try the admin endpoints. In production the portal
 * that signs in your administrators mints these.
 */
export async function createAdminToken(options: AdminTokenOptions): Promise<string> {
  const secret =
    typeof options.secret === 'string' ? new TextEncoder().encode(options.secret) : options.secret;
  if (!(secret instanceof Uint8Array) || secret.byteLength < 32) {
    throw new TypeError(
      'createAdminToken: secret must be at least 32 bytes, the adminSession.secret keyhook checks',
    );
  }
  if (
    typeof options.tenantId !== 'string' ||
    options.tenantId.length === 0 ||
    options.tenantId.length > 200
  ) {
    throw new TypeError('createAdminToken: tenantId must be a non-empty string of at most 200 characters');
  }
  const lifetime = options.expiresInSeconds ?? 3600;
  if (!Number.isSafeInteger(lifetime) || lifetime < 1 || lifetime > MAX_ADMIN_TOKEN_SECONDS) {
    throw new TypeError(
      `createAdminToken: expiresInSeconds must be a whole number from 1 to ${MAX_ADMIN_TOKEN_SECONDS}`,
    );
  }
  const issuedAt = Math.floor((options.now ?? new Date()).getTime() / 1000);
  let jwt = new SignJWT({ [options.tenantClaim ?? 'tenant_id']: options.tenantId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(options.subject ?? 'dev-admin')
    .setIssuedAt(issuedAt)
    .setExpirationTime(issuedAt + lifetime);
  if (options.issuer !== undefined) jwt = jwt.setIssuer(options.issuer);
  if (options.audience !== undefined) jwt = jwt.setAudience(options.audience);
  return jwt.sign(secret);
}
