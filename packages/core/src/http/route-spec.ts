import type { z } from 'zod';
import type { AdminSession } from '../admin/session.js';
import type { ApiKeyRecord } from '../store/types.js';
import type { KeyhookRequest, KeyhookResponse, RouteDefinition } from './messages.js';
import type { ApiOperation } from './openapi-document.js';

interface BaseContext {
  request: KeyhookRequest;
  params: Record<string, string>;
  query: URLSearchParams;
  /** The parsed JSON body, for routes with `body: 'json'`; with `'optional-json'`, undefined when none was sent. */
  body: unknown;
}

/** What the OpenAPI document says of a route (http/openapi-document.ts). */
export interface RouteDoc {
  summary: string;
  /** The success status. */
  success: number;
  /** The success body's schema: the one its view is typed by. None for 204. */
  response?: z.ZodType | undefined;
  /** Failure statuses beyond those every route and its auth, body, query and path imply. */
  errors?: readonly number[] | undefined;
  /** The JSON body's schema: the one the route validates with. */
  requestBody?: z.ZodType | undefined;
  /** Query parameters the route reads. */
  query?: readonly string[] | undefined;
  /** An `Idempotency-Key` header is honoured. */
  idempotent?: boolean | undefined;
}

export type RouteSpec =
  | (RouteDefinition & {
      auth: 'admin';
      body: 'json' | 'optional-json' | 'none';
      doc: RouteDoc;
      run(context: BaseContext & { admin: AdminSession }): Promise<KeyhookResponse>;
    })
  | (RouteDefinition & {
      /** Answered without credentials: the portal's link exchange, which checks its own. */
      auth: 'none';
      body: 'json' | 'none';
      doc: RouteDoc;
      run(context: BaseContext): Promise<KeyhookResponse>;
    })
  | (RouteDefinition & {
      auth: 'apiKey';
      /** The scope the key must carry; none: any valid key. */
      scope?: string | undefined;
      body: 'json' | 'none';
      doc: RouteDoc;
      run(context: BaseContext & { apiKey: ApiKeyRecord }): Promise<KeyhookResponse>;
    });

/**
 * A route as the OpenAPI document describes it, at `path` (its full path), listed under `tag`.
 * `auth` says who calls it where it is served, when that is not the route's own (the portal serves
 * admin routes again under its session).
 */
export function toApiOperation(
  route: RouteSpec,
  path: string,
  tag: string,
  auth: ApiOperation['auth'] = route.auth,
): ApiOperation {
  return {
    method: route.method,
    path,
    summary: route.doc.summary,
    success: route.doc.success,
    response: route.doc.response,
    // Any route refuses a body over the limit, even one that takes none.
    errors: [...(route.doc.errors ?? []), 413],
    requestBody: route.doc.requestBody,
    requestBodyOptional: route.body === 'optional-json',
    query: route.doc.query,
    idempotent: route.doc.idempotent,
    auth,
    scope: route.auth === 'apiKey' ? route.scope : undefined,
    answeredBy: 'keyhook',
    tag,
  };
}
