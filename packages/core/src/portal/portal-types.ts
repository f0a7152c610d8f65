import type { KeyhookRequest, KeyhookResponse, RouteDefinition } from '../http/messages.js';

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
  readonly api: Mountable;
}
