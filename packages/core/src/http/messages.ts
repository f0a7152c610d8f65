/** Header values as Node gives them; names are matched case-insensitively. */
export type RequestHeaders = Record<string, string | string[] | undefined>;

/**
 * The one shape a request takes on its way into core. Adapters fill it from their
 * framework and add nothing else: every rule lives behind `handle`.
 */
export interface KeyhookRequest {
  method: string;
  /** The path below the mount point, e.g. `/admin/keys/key_…`, without the query. */
  path: string;
  /** The raw query string without `?`, if any. */
  query?: string | undefined;
  headers: RequestHeaders;
  /** The exact body bytes; `null` or empty when there is none. Never a re-serialised body. */
  rawBody: Uint8Array | null;
  /**
   * Set when the adapter could not read the body: it went over `keyhook.maxBodyBytes`
   * (`too_large`), or the stream broke or had an unknown encoding (`unreadable`).
   */
  bodyError?: 'too_large' | 'unreadable' | undefined;
  /**
   * The client's address as the framework reports it (Fastify's `request.ip`, Express's
   * `req.ip`, which follow the framework's proxy trust). Failed API-key verifications are
   * limited per address (`rateLimit.failedAuth`), as client-address.ts reads it; without it they
   * are not limited.
   */
  clientAddress?: string | undefined;
  /**
   * The path the routes are mounted at, as the client sees it (`/api/v1/portal`): Express's
   * `req.baseUrl`, Fastify's scope prefix. The portal's pages link their assets and scope their
   * cookie by it.
   */
  basePath?: string | undefined;
}

export interface KeyhookResponse {
  status: number;
  headers: Record<string, string>;
  /** A JSON document, or `null` for no body (204). */
  body: string | null;
}

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** A route as adapters register it: `:name` marks a path parameter. */
export interface RouteDefinition {
  method: HttpMethod;
  path: string;
}
