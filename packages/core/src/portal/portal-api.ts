import type { AdminSession } from '../admin/session.js';
import type { EventCatalogEntry } from '../catalog/events.js';
import type { ScopeCatalog } from '../catalog/scopes.js';
import type { Clock } from '../clock.js';
import { KeyhookError } from '../errors.js';
import { bearerToken, header } from '../http/headers.js';
import type { KeyhookRequest } from '../http/messages.js';
import { emptyResponse, jsonResponse } from '../http/response.js';
import type { RouteSpec } from '../http/route-spec.js';
import type { RateLimit } from '../keys/rate-limit.js';
import type { Logger } from '../logger.js';
import type { DeliveryQueueStore } from '../store/types.js';
import { parseOrThrow } from '../validation.js';
import {
  type PortalExchangeAnswer,
  type PortalSessionAnswer,
  type PortalSessionView,
  portalExchangeAnswerSchema,
  portalExchangeSchema,
  portalSessionAnswerSchema,
  type WebhookStats,
  webhookStatsSchema,
} from './portal-contract.js';
import { csrfTokenMatches, csrfTokenOf, type PortalGrant, type PortalSessions } from './portal-sessions.js';
import { CSRF_HEADER, PORTAL_COOKIE, type PortalPermission, SESSION_ID_HEADER } from './portal-types.js';

/** A webhook's recent success rate is over its attempts of this window. */
const RECENT_ATTEMPTS_MS = 24 * 3_600_000;

const SAFE_METHODS = new Set(['GET', 'HEAD']);

export interface PortalApiDeps {
  sessions: PortalSessions;
  store: Pick<DeliveryQueueStore, 'countRecentAttempts'>;
  clock: Clock;
  scopes: ScopeCatalog;
  /** The admin routes the portal serves again under a session: keys, webhooks and deliveries. */
  adminRoutes: readonly RouteSpec[];
  /** The host's event catalog as the portal shows it. */
  events: () => EventCatalogEntry[];
  /** Whether endpoint URLs may be http:// or private addresses (development): the URL field says so. */
  developmentUrls: boolean;
  /** The host's delivery header names, for the catalog page's verification snippet. */
  headers: Readonly<{ signature: string; eventId: string }>;
  /** Send the cookie with `Secure` (outside development). */
  secureCookie: boolean;
  /** Where the cookie is scoped when the adapter does not say where the portal is mounted. */
  cookiePath: string;
  /** Origins allowed to send state-changing requests; default: the request's own (its `Host`). */
  origins: readonly string[] | undefined;
  /** The host's default rate limit for a tenant: the most a key's own limit set in the portal may allow. */
  rateCeiling: (tenantId: string) => RateLimit | null;
  logger: Logger;
}

/**
 * What each admin route the portal serves again needs (docs/decisions.md §22.5). Every admin
 * route is named here: one added without a line refuses to start, so none reaches the portal
 * by default.
 */
const ADMIN_PERMISSIONS: Readonly<Record<string, PortalPermission>> = {
  'POST /admin/keys': 'keys:write',
  'GET /admin/keys': 'keys:read',
  'GET /admin/keys/:keyId': 'keys:read',
  'PATCH /admin/keys/:keyId': 'keys:write',
  'POST /admin/keys/:keyId/rotate': 'keys:write',
  'DELETE /admin/keys/:keyId': 'keys:write',
  'POST /admin/webhooks': 'webhooks:write',
  'GET /admin/webhooks': 'webhooks:read',
  'GET /admin/webhooks/:webhookId': 'webhooks:read',
  'PATCH /admin/webhooks/:webhookId': 'webhooks:write',
  'DELETE /admin/webhooks/:webhookId': 'webhooks:write',
  'POST /admin/webhooks/:webhookId/rotate': 'webhooks:write',
  'POST /admin/webhooks/:webhookId/test': 'webhooks:write',
  'GET /admin/webhooks/:webhookId/deliveries': 'webhooks:read',
  'GET /admin/webhooks/:webhookId/deliveries/:deliveryId': 'webhooks:read',
  'POST /admin/webhooks/:webhookId/deliveries/:deliveryId/retry': 'webhooks:write',
  'POST /admin/webhooks/:webhookId/recover': 'webhooks:write',
};

/**
 * The portal's JSON API (docs/decisions.md §22), mounted at the portal's path: the link exchange,
 * the session, sign-out, and keyhook's admin routes for keys, webhooks and deliveries at
 * `/api/keys…` and `/api/webhooks…`, run under the session's tenant and permissions.
 */
export function portalApi(deps: PortalApiDeps) {
  const permissionOf = new Map<RouteSpec, PortalPermission | null>();
  /** The grant `authorize` found for a request, for the routes that answer with it. */
  const grants = new WeakMap<KeyhookRequest, PortalGrant>();
  const grantOf = (request: KeyhookRequest) => grants.get(request)!;

  const sessionView = (grant: PortalGrant): PortalSessionView => ({
    id: grant.sessionId,
    tenantId: grant.tenantId,
    expiresAt: grant.expiresAt.toISOString(),
    permissions: [...grant.permissions],
    scopes: (grant.scopes ?? deps.scopes.names)
      .filter((name) => deps.scopes.has(name))
      .map((name) => ({ name, description: deps.scopes.descriptions.get(name) })),
    events: deps.events(),
    headers: deps.headers,
    developmentUrls: deps.developmentUrls,
  });

  /** Where the portal answers, as the browser sees it: the adapter's mount (`/` at the root), else the configured URL's. */
  const cookiePathOf = (request: KeyhookRequest) =>
    request.basePath === undefined ? deps.cookiePath : request.basePath || '/';
  let warnedOfMismatch = false;
  /** Links minted for one path and a portal mounted at another never meet: said once, at the first exchange. */
  const warnIfLinksPointElsewhere = (request: KeyhookRequest) => {
    if (warnedOfMismatch || request.basePath === undefined || cookiePathOf(request) === deps.cookiePath)
      return;
    warnedOfMismatch = true;
    deps.logger.warn(
      { mountedAt: cookiePathOf(request), linksTo: deps.cookiePath },
      'the portal is mounted at another path than its links point to: set createKeyhook({ portal: { url } }) to where it is served',
    );
  };
  const secondsLeft = (grant: PortalGrant) =>
    Math.max(0, Math.floor((grant.expiresAt.getTime() - deps.clock.now().getTime()) / 1000));
  const cookie = (request: KeyhookRequest, value: string, maxAgeSeconds: number) =>
    [
      `${PORTAL_COOKIE}=${value}`,
      `Path=${cookiePathOf(request)}`,
      `Max-Age=${maxAgeSeconds}`,
      'HttpOnly',
      'SameSite=Strict',
      ...(deps.secureCookie ? ['Secure'] : []),
    ].join('; ');

  const own: RouteSpec[] = [
    {
      method: 'POST',
      path: '/api/exchange',
      doc: {
        summary: "Exchange a portal link for a session (the link's one use)",
        success: 200,
        requestBody: portalExchangeSchema,
        response: portalExchangeAnswerSchema,
        // A link that does not open (unknown, revoked, used, expired); a request not from the portal's page.
        errors: [401, 403],
      },
      auth: 'none',
      body: 'json',
      run: async ({ request, body }) => {
        assertSameOrigin(request, deps.origins);
        warnIfLinksPointElsewhere(request);
        const { token, embedded } = parseOrThrow(portalExchangeSchema, body);
        const { grant, csrfToken } = await deps.sessions.exchange(token);
        const answer: PortalExchangeAnswer = { session: sessionView(grant), csrfToken };
        if (embedded) return jsonResponse(200, { ...answer, sessionToken: grant.token });
        return jsonResponse(200, answer, { 'set-cookie': cookie(request, grant.token, secondsLeft(grant)) });
      },
    },
    {
      method: 'GET',
      path: '/api/session',
      doc: {
        summary: 'The session: who, what it may do, the host catalog',
        success: 200,
        response: portalSessionAnswerSchema,
      },
      auth: 'admin',
      body: 'none',
      run: async ({ request }) => {
        const grant = grantOf(request);
        const answer: PortalSessionAnswer = {
          session: sessionView(grant),
          csrfToken: csrfTokenOf(grant.token),
        };
        return jsonResponse(200, answer);
      },
    },
    {
      method: 'POST',
      path: '/api/sign-out',
      doc: { summary: 'End the session', success: 204 },
      auth: 'admin',
      body: 'none',
      run: async ({ request, admin }) => {
        await deps.sessions.revoke(admin.tenantId, grantOf(request).sessionId);
        // A session held in memory (a bearer token) leaves the browser's cookie, another session's, alone.
        if (heldInMemory(request)) return emptyResponse(204);
        return emptyResponse(204, { 'set-cookie': cookie(request, '', 0) });
      },
    },
    {
      method: 'POST',
      path: '/api/switch',
      doc: {
        summary: "Make the session held in memory (a bearer token) this browser's: its cookie",
        success: 204,
      },
      auth: 'admin',
      body: 'none',
      run: async ({ request }) => {
        const grant = grantOf(request);
        return emptyResponse(204, { 'set-cookie': cookie(request, grant.token, secondsLeft(grant)) });
      },
    },
    {
      method: 'GET',
      path: '/api/webhooks/stats',
      doc: {
        summary: "Each endpoint's attempts of the last 24 hours",
        success: 200,
        response: webhookStatsSchema,
      },
      auth: 'admin',
      body: 'none',
      run: async ({ admin }) => {
        const since = new Date(deps.clock.now().getTime() - RECENT_ATTEMPTS_MS);
        const data = await deps.store.countRecentAttempts(admin.tenantId, since);
        const answer: WebhookStats = { since: since.toISOString(), data };
        return jsonResponse(200, answer);
      },
    },
  ];
  for (const route of own)
    permissionOf.set(route, route.path === '/api/webhooks/stats' ? 'webhooks:read' : null);

  const reused = deps.adminRoutes.flatMap((route): RouteSpec[] => {
    if (route.auth !== 'admin') return [];
    const permission = ADMIN_PERMISSIONS[`${route.method} ${route.path}`];
    if (permission === undefined) {
      throw new TypeError(`keyhook: the portal names no permission for ${route.method} ${route.path}`);
    }
    const portalRoute = { ...route, path: route.path.replace(/^\/admin/, '/api') };
    permissionOf.set(portalRoute, permission);
    return [portalRoute];
  });

  return {
    routes: [...own, ...reused],
    /** The handler's admin check, for the portal: the session, the origin and CSRF token, the permission. */
    authorize: async (request: KeyhookRequest, route: RouteSpec): Promise<AdminSession> => {
      // A framed page sends its session token as a bearer token; any other page, its cookie.
      const grant = await deps.sessions.authenticate(sessionTokenOf(request));
      const expected = header(request.headers, SESSION_ID_HEADER);
      if (expected !== undefined && expected !== grant.sessionId) throw replacedSession();
      grants.set(request, grant);
      if (!SAFE_METHODS.has(request.method.toUpperCase())) {
        assertSameOrigin(request, deps.origins);
        if (!csrfTokenMatches(grant, header(request.headers, CSRF_HEADER))) {
          throw new KeyhookError(
            'forbidden',
            'This request has no valid CSRF token: send the session’s x-csrf-token.',
          );
        }
      }
      // Only the routes built here reach this check; one without an entry is refused, never let through.
      const permission = permissionOf.get(route);
      if (permission === undefined) throw new KeyhookError('forbidden', 'The portal does not serve this.');
      if (permission !== null && !grant.permissions.includes(permission)) {
        throw new KeyhookError(
          'forbidden',
          `This portal session does not have the ${permission} permission.`,
          {
            details: [{ message: `missing permission ${permission}`, permission }],
          },
        );
      }
      return {
        tenantId: grant.tenantId,
        subject: `portal:${grant.sessionId}`,
        claims: {},
        grant: { scopes: grant.scopes ?? undefined, rateCeiling: deps.rateCeiling(grant.tenantId) },
      };
    },
  };
}

/** The page holds its session in memory and sends it as a bearer token: a framed page, or a link not yet switched to. */
function heldInMemory(request: KeyhookRequest): boolean {
  // Only a portal session token: a page behind HTTP Basic auth still sends its cookie beside it.
  return bearerToken(request.headers)?.startsWith('kps_') === true;
}

/** `Authorization: Bearer kps_…` (the scheme in any case), else the session cookie. */
function sessionTokenOf(request: KeyhookRequest): string | undefined {
  if (heldInMemory(request)) return bearerToken(request.headers);
  const cookies = header(request.headers, 'cookie');
  if (cookies === undefined) return undefined;
  for (const part of cookies.split(';')) {
    const at = part.indexOf('=');
    if (at !== -1 && part.slice(0, at).trim() === PORTAL_COOKIE) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * A request that changes something must come from the portal's own page: an `Origin` of the
 * request's own host (or one of `origins`), and no `Sec-Fetch-Site` other than `same-origin`.
 */
function assertSameOrigin(request: KeyhookRequest, origins: readonly string[] | undefined): void {
  const origin = header(request.headers, 'origin');
  const site = header(request.headers, 'sec-fetch-site');
  let allowed = origin !== undefined && (site === undefined || site === 'same-origin');
  if (allowed && origins !== undefined) allowed = origins.includes(origin!);
  else if (allowed) allowed = hostOf(origin!) === header(request.headers, 'host')?.toLowerCase();
  if (!allowed) {
    throw new KeyhookError('forbidden', 'This request did not come from the portal’s own page.');
  }
}

function replacedSession(): KeyhookError {
  const message =
    'This browser opened another portal session after this page started. Reload the page to continue in it.';
  return new KeyhookError('invalid_portal_session', message, { details: [{ message, reason: 'replaced' }] });
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
