import type { KeyhookRequest, KeyhookResponse, RouteDefinition } from '../http/messages.js';
import type { ApiOperation } from '../http/openapi-document.js';

/** The session cookie. Path-scoped to the portal, HttpOnly, SameSite=Strict (docs/decisions.md §22.3). */
export const PORTAL_COOKIE = 'keyhook_portal';
/** The header a portal page sends its CSRF token in, on every request that changes something. */
export const CSRF_HEADER = 'x-csrf-token';
/**
 * The header a portal page names its session in (`ps_…`), on every request: a request whose
 * cookie now opens another session (a link opened in another tab) is refused, not answered from
 * that session (docs/decisions.md §22.14).
 */
export const SESSION_ID_HEADER = 'x-portal-session';

/** What a portal session may do. Reading deliveries is `webhooks:read`; retrying, recovering and testing are `webhooks:write`. */
export const PORTAL_PERMISSIONS = ['keys:read', 'keys:write', 'webhooks:read', 'webhooks:write'] as const;

export type PortalPermission = (typeof PORTAL_PERMISSIONS)[number];

/** `keyhook.portal.createSession`'s input. */
export interface CreatePortalSessionInput<Scope extends string = string> {
  /** The customer whose keys and webhooks the session sees; no other tenant's. */
  tenantId: string;
  /** What the customer may do: a subset of `PORTAL_PERMISSIONS`, at least one. */
  permissions: readonly PortalPermission[];
  /** Seconds until the link, and the session it opens, end. Default 3,600; at most 86,400. */
  expiresIn?: number | undefined;
  /** The scopes a key created in this session may carry; default: any of the host's. */
  scopes?: readonly Scope[] | undefined;
}

/** A minted portal session: hand `url` to the customer's browser. */
export interface PortalSessionLink {
  /** `ps_…`: for `revokeSession`. */
  id: string;
  /** The portal's URL with the one-time token in its fragment (`…/portal#token=kpl_…`). */
  url: string;
  /** `kpl_…`: the one-time token the URL carries; exchange it once. */
  token: string;
  expiresAt: Date;
}

/**
 * Something an adapter can serve below a path: a route list and one handler for them, as keyhook
 * itself is. `@keyhook/portal`'s `keyhookPortal()` makes one.
 */
export interface Mountable {
  /**
   * Where it is served, from the same point as the adapter's `prefix`; undefined: the adapter's
   * default for it.
   */
  readonly path?: string | undefined;
  /** Every route `handle` serves, relative to `path`. */
  readonly routes: readonly RouteDefinition[];
  /** Adapters stop reading a body past this many bytes and pass `bodyError: 'too_large'`. */
  readonly maxBodyBytes: number;
  handle(request: KeyhookRequest): Promise<KeyhookResponse>;
}

/** `keyhook.portal`: sessions for the host's customers, and the JSON API the portal's pages call. */
export interface Portal<Scope extends string = string> {
  /**
   * Mints a one-time link for one customer (docs/decisions.md §22). Call it from the host's
   * backend, for a customer the host has signed in, and hand `url` to that browser only.
   */
  createSession(input: CreatePortalSessionInput<Scope>): Promise<PortalSessionLink>;
  /** Ends one session of the tenant at once; false when the tenant has no such session that is not revoked already. */
  revokeSession(tenantId: string, sessionId: string): Promise<boolean>;
  /** Ends every standing session of the tenant at once; returns how many. */
  revokeSessions(tenantId: string): Promise<number>;
  /**
   * The portal's JSON API, relative to the portal's mount (`/api/keys`, …): what its pages call,
   * under the session's cookie or token. `@keyhook/portal` serves it beside the pages.
   */
  readonly api: PortalApi;
}

/** `keyhook.portal.api`: the portal's JSON API, and its description. */
export interface PortalApi extends Mountable {
  /**
   * Each route as an OpenAPI operation at `path` (default: the path of the portal's URL,
   * `/api/v1/portal`), with its request and response schemas: pass them to `openApiDocument`,
   * alone or beside `keyhook.operations()`.
   */
  operations(path?: string): ApiOperation[];
}
