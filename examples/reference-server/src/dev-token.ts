import { createAdminToken, isKeyhookError, PORTAL_PERMISSIONS, type Portal } from '@keyhook/core';
import { SCOPES } from './data-plane/index.js';

/** data-plane.md §7.1: the ready token printed in development is for this tenant. */
export const DEV_TENANT_ID = 'demo';
export const DEV_SUBJECT = 'demo-admin';
export const DEV_TOKEN_TTL_SECONDS = 12 * 60 * 60;
/** The printed portal link lives as long as the printed token, but never more than an hour. */
export const DEV_PORTAL_LINK_MAX_SECONDS = 60 * 60;

export interface DevTokenOptions {
  secret: string;
  issuer?: string;
  audience?: string;
  now?: Date;
  /** Default DEV_TOKEN_TTL_SECONDS; main.ts keeps it within KEYHOOK_ADMIN_JWT_MAX_LIFETIME. */
  expiresInSeconds?: number;
}

/** An admin JWT as a portal would mint it, signed with the generated development secret. */
export async function mintDevAdminToken(options: DevTokenOptions): Promise<string> {
  // The verifier checks iss/aud when they are configured, so the dev token carries them.
  return createAdminToken({
    secret: options.secret,
    tenantId: DEV_TENANT_ID,
    subject: DEV_SUBJECT,
    expiresInSeconds: options.expiresInSeconds ?? DEV_TOKEN_TTL_SECONDS,
    issuer: options.issuer,
    audience: options.audience,
    now: options.now,
  });
}

/** A one-time link to the customer portal, as the banner prints it. */
export interface DevPortalLink {
  /** `<portal url>#token=kpl_…`: relative to the server unless `createKeyhook({ portal: { url } })` says otherwise. */
  url: string;
  ttlSeconds: number;
  expiresAt: Date;
}

/**
 * A link that opens the portal once for the development tenant, with every permission, living
 * as long as the printed admin token or an hour, whichever is less. Undefined when the token
 * lives less than the shortest link core mints (docs/decisions.md §22.2): then none is printed.
 */
export async function mintDevPortalLink(
  portal: Pick<Portal, 'createSession'>,
  tokenTtlSeconds: number,
): Promise<DevPortalLink | undefined> {
  const ttlSeconds = Math.min(DEV_PORTAL_LINK_MAX_SECONDS, tokenTtlSeconds);
  try {
    const link = await portal.createSession({
      tenantId: DEV_TENANT_ID,
      permissions: PORTAL_PERMISSIONS,
      expiresIn: ttlSeconds,
    });
    return { url: link.url, ttlSeconds, expiresAt: link.expiresAt };
  } catch (error) {
    // Core decides the shortest link; its refusal of this one is the answer, not a failed start.
    if (isKeyhookError(error) && error.code === 'validation_failed') return undefined;
    throw error;
  }
}

/**
 * What a developer reads at start: the admin token, a curl line that creates a first key, and
 * the portal link when there is one.
 */
export function devTokenBanner(
  token: string,
  baseUrl: string,
  ttlSeconds: number = DEV_TOKEN_TTL_SECONDS,
  portalLink?: DevPortalLink,
): string {
  const body = JSON.stringify({ name: 'my first key', scopes: SCOPES });
  return [
    '',
    // One line each: every migration logs one above, and the curl lines stay on a first screen.
    `Development mode: no KEYHOOK_ADMIN_JWT_SECRET or KEYHOOK_ADMIN_JWKS_URL, so a throwaway admin secret and a token (tenant "${DEV_TENANT_ID}", sub "${DEV_SUBJECT}", valid ${describeSeconds(ttlSeconds)}, until the process exits):`,
    `  KEYHOOK_ADMIN_TOKEN=${token}`,
    'Create an API key:',
    `  curl -sS -X POST ${baseUrl}/api/v1/admin/keys -H 'Authorization: Bearer ${token}' -H 'Content-Type: application/json' -d '${body}'`,
    '',
    'Then use the data plane with the returned secret (the docs: ' + `${baseUrl}/api/v1/docs):`,
    `  curl -sS -X POST ${baseUrl}/api/v1/sources -H 'Authorization: Bearer <API_KEY>' -H 'Content-Type: application/json' -d '{"name":"docs"}'`,
    '',
    // Last: the curl lines stay on a first screen of 24 rows (log-stream.test.ts).
    ...(portalLink === undefined
      ? []
      : [
          `Or in a browser: the customer portal (tenant "${DEV_TENANT_ID}", every permission, valid ${describeSeconds(portalLink.ttlSeconds)}; the link works once):`,
          `  ${baseUrl}${portalLink.url}`,
          '',
        ]),
  ].join('\n');
}

/** A base URL a local curl can reach, even when the server listens on every interface. */
export function reachableBaseUrl(host: string, port: number): string {
  const local = host === '0.0.0.0' ? '127.0.0.1' : host === '::' || host === '[::]' ? '::1' : host;
  const bracketed = local.includes(':') && !local.startsWith('[') ? `[${local}]` : local;
  return `http://${bracketed}:${port}`;
}

/** `12 h`, `30 min`, `45 s`: the token's validity as the banner states it. */
function describeSeconds(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}
