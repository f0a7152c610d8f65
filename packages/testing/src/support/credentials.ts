import { TEST_ADMIN_SECRET } from '@keyhook/store-conformance/support';
import { SignJWT } from 'jose';

export interface AdminTokenOptions {
  tenantId?: string | null;
  subject?: string;
  /** Seconds from `now` until expiry; negative for an expired token. */
  expiresIn?: number;
  now?: Date;
  secret?: string;
  issuer?: string;
  audience?: string;
  extraClaims?: Record<string, unknown>;
}

/** A signed admin-portal JWT, as a portal would mint it. */
export async function adminToken(options: AdminTokenOptions = {}): Promise<string> {
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const claims: Record<string, unknown> = { ...options.extraClaims };
  if (options.tenantId !== null) claims['tenant_id'] = options.tenantId ?? 'tenant_a';
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(options.subject ?? 'admin_1')
    .setIssuedAt(now)
    .setExpirationTime(now + (options.expiresIn ?? 3600));
  if (options.issuer) jwt = jwt.setIssuer(options.issuer);
  if (options.audience) jwt = jwt.setAudience(options.audience);
  return jwt.sign(new TextEncoder().encode(options.secret ?? TEST_ADMIN_SECRET));
}
