import { z } from 'zod';
import type { EventCatalogEntry } from '../catalog/events.js';
import type { DeliveryHeaderNames } from '../delivery/signature.js';
import { CSRF_HEADER, PORTAL_COOKIE, SESSION_ID_HEADER } from '../portal/portal-types.js';
import type { HttpMethod } from './messages.js';

/** One operation as the OpenAPI document describes it: keyhook's own routes, or a host's. */
export interface ApiOperation {
  method: HttpMethod;
  /** The full path, `:name` marking a parameter (`/api/v1/admin/keys/:keyId`). */
  path: string;
  summary: string;
  /** The success status, or each of them (`[200, 201]`: updated, created); 204 has no body. */
  success: number | readonly number[];
  /** The success body's schema. Without one a JSON success is described as any object. */
  response?: z.ZodType | undefined;
  /**
   * Failure statuses beyond those the operation implies: 401 with auth, 403 with a scope, 400
   * with a body or query, 415 with a body, 404 with a path parameter, 409 when idempotent, 503
   * always (the database is away).
   */
  errors?: readonly number[] | undefined;
  /** The JSON body's zod schema: the one the route validates with. */
  requestBody?: z.ZodType | undefined;
  /** The body may be left out (default: it is required). */
  requestBodyOptional?: boolean | undefined;
  query?: readonly string[] | undefined;
  /**
   * Who may call it: an admin session, any API key (with `scope` when it needs one), a session of
   * the customer portal (its cookie, or its token as a bearer token, and its CSRF token on a
   * change), or anyone.
   */
  auth: 'admin' | 'apiKey' | 'portal' | 'none';
  scope?: string | undefined;
  /** An `Idempotency-Key` header is honoured. */
  idempotent?: boolean | undefined;
  /** The group it is listed under. */
  tag: string;
  /** For a route that is not JSON: its success content type. */
  produces?: string | undefined;
  /**
   * `keyhook`: keyhook answers every response of the operation (its own routes), so each carries
   * `x-request-id`, a 503 `Retry-After`. Default `host`: only the guard's refusals are keyhook's.
   */
  answeredBy?: 'keyhook' | 'host' | undefined;
}

/**
 * Where the document's 3.1 `webhooks` section comes from: a keyhook (its event catalog and its
 * delivery header names), or anything that answers the same.
 */
export interface ApiWebhooks {
  eventCatalog(): readonly EventCatalogEntry[];
  readonly headerNames: Readonly<DeliveryHeaderNames>;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string | undefined;
}

/** Where the API is served; paths in the document are full paths, so `/` is the server's root. */
export interface OpenApiServer {
  url: string;
  description?: string | undefined;
}

const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: {
          type: 'string',
          description: 'From the closed list of docs/decisions.md §1.2, or the host’s own.',
        },
        message: { type: 'string' },
        details: {
          type: 'array',
          items: {
            type: 'object',
            properties: { path: { type: 'string' }, message: { type: 'string' } },
          },
        },
      },
    },
  },
} as const;

/**
 * An OpenAPI 3.1 document for `operations`: request bodies from the zod schemas the routes
 * validate with (JSON Schema 2020-12, which 3.1 uses as it is), bearer security per route, the
 * list parameters, and the one error envelope for every failure. With `webhooks`, every event
 * type is an operation of the 3.1 `webhooks` section: the POST a receiver gets, its signed
 * headers and its body, `data` from the event's schema.
 */
export function openApiDocument(
  info: OpenApiInfo,
  operations: readonly ApiOperation[],
  webhooks?: ApiWebhooks,
  servers: readonly OpenApiServer[] = [{ url: '/', description: 'The server this document came from' }],
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const operation of operations) {
    const path = operation.path.replace(/:(\w+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][operation.method.toLowerCase()] = describe(operation);
  }
  return {
    openapi: '3.1.0',
    info,
    servers,
    paths,
    ...(webhooks && { webhooks: describeWebhooks(webhooks) }),
    components: {
      schemas: { Error: ERROR_SCHEMA },
      headers: HEADERS,
      securitySchemes: {
        ...(operations.some((operation) => operation.auth === 'portal') && PORTAL_SECURITY_SCHEMES),
        adminSession: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'An admin-portal session (docs/decisions.md §2): the tenant comes from its tenant claim.',
        },
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'sk_live_<16 hex>_<48 hex>',
          description:
            'A Developer API key (docs/http-api.md §2, §5.2): sk_live_<16 hex>_<48 hex> by default; a server may mint its own prefix, with a checksum.',
        },
      },
    },
  };
}

function describe(operation: ApiOperation): Record<string, unknown> {
  const parameters: Record<string, unknown>[] = [];
  for (const [, name] of operation.path.matchAll(/:(\w+)/g)) {
    parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
  }
  for (const name of operation.query ?? []) parameters.push(queryParameter(name));
  if (operation.idempotent) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: '1–255 printable ASCII characters: the same request again replays the first answer.',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  }
  const described: Record<string, unknown> = {
    operationId: operationId(operation),
    summary: operation.summary,
    tags: [operation.tag],
    parameters,
    responses: responsesOf(operation),
  };
  if (operation.auth === 'portal') {
    parameters.push(...portalHeaders(operation.method));
    described['security'] = [{ portalCookie: [] }, { portalToken: [] }];
  } else if (operation.auth !== 'none') {
    described['security'] = [{ [operation.auth === 'admin' ? 'adminSession' : 'apiKey']: [] }];
  }
  if (operation.scope) described['x-required-scope'] = operation.scope;
  if (operation.requestBody) {
    const schema = jsonSchemaOf(operation.requestBody, 'input');
    described['requestBody'] = {
      required: operation.requestBodyOptional !== true,
      content: { 'application/json': { schema } },
    };
  }
  return described;
}

/** A portal session: the cookie a page of the portal holds, or the token a framed page holds in memory. */
const PORTAL_SECURITY_SCHEMES = {
  portalCookie: {
    type: 'apiKey',
    in: 'cookie',
    name: PORTAL_COOKIE,
    description:
      'The session cookie the link exchange sets (docs/decisions.md §22.3): HttpOnly, SameSite=Strict, scoped to the portal.',
  },
  portalToken: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'kps_<43 base64url>',
    description: 'The session token an exchange with `embedded` answers, for a page inside a frame.',
  },
} as const;

/**
 * A portal page names its session on every request, and sends its CSRF token, from the portal's
 * own origin, on every request that changes something (docs/decisions.md §22.4, §22.14).
 */
function portalHeaders(method: string): Record<string, unknown>[] {
  const named = {
    name: SESSION_ID_HEADER,
    in: 'header',
    required: false,
    description:
      'The session the page started with (`ps_…`): when the cookie now opens another one, the request is refused (401, reason `replaced`).',
    schema: { type: 'string' },
  };
  if (method === 'GET' || method === 'HEAD') return [named];
  const csrf = {
    name: CSRF_HEADER,
    in: 'header',
    required: true,
    description:
      "The session's CSRF token (`csrfToken` of the session's answer); the `Origin` must be the portal's.",
    schema: { type: 'string' },
  };
  return [named, csrf];
}

/** A header whose value is a whole number. */
const wholeNumber = (description: string) =>
  ({ description, schema: { type: 'string', pattern: '^\\d+$' } }) as const;

/** The response headers a client can rely on, described once and referenced by each response. */
const HEADERS = {
  RequestId: {
    description: "This request's id, as the server logged it: quote it when asking about a request.",
    schema: { type: 'string' },
  },
  WwwAuthenticate: {
    description: 'RFC 6750 challenge: `Bearer realm="keyhook"`, with `error` and `scope` when known.',
    schema: { type: 'string' },
  },
  RetryAfter: wholeNumber('Seconds to wait before trying again.'),
  RateLimitLimit: wholeNumber(
    "The key's limit: requests allowed per window (draft-ietf-httpapi-ratelimit-headers-06). Sent with every 429, and on successes when the server is configured to.",
  ),
  RateLimitRemaining: wholeNumber('Requests left in the current window.'),
  RateLimitReset: wholeNumber('Seconds until the current window ends and the count starts again.'),
  RateLimitPolicy: {
    description: 'The policy, `limit;w=window`: e.g. `100;w=60` is 100 requests per 60-second window.',
    schema: { type: 'string', pattern: '^\\d+;w=\\d+$' },
  },
  IdempotentReplayed: {
    description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key.',
    schema: { type: 'string', enum: ['true'] },
  },
} as const;

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The body is not JSON (`invalid_json`), or a field, parameter or rule failed (`validation_failed`, `details` names each).',
  401: 'No credentials, or credentials that are not valid (the code says which kind, never which part).',
  403: 'Not allowed to these credentials: a key without the scope this operation needs (`insufficient_scope`); in the portal, a session without the permission, or a change not sent from the portal’s page with its CSRF token (`forbidden`).',
  404: "No such resource for this tenant (`not_found`): unknown ids and other tenants' ids alike.",
  409: "A conflict with the resource's state or a concurrent request (the code says which).",
  410: "The events feed's `after` or `since` is older than the feed keeps, or `after` is an id of the host's it no longer holds (`feed_expired`): start again without it.",
  413: 'The body is larger than the limit (`payload_too_large`).',
  415: 'The body is not application/json in UTF-8, or is compressed (`unsupported_media_type`).',
  429: "Too many requests (`rate_limited`): the key's rate limit is spent, or the address's failed authentications are. Retry after Retry-After.",
  500: 'A fault of the server (`internal_error`), logged under this request id. Nothing a client sends causes one.',
  503: 'The database cannot be reached (`unavailable`); try again after Retry-After.',
};

function headerRef(name: keyof typeof HEADERS, required: boolean): Record<string, unknown> {
  // A reference cannot also say `required`, so a required header is written out whole.
  return required
    ? { description: HEADERS[name].description, required: true, schema: HEADERS[name].schema }
    : { $ref: `#/components/headers/${name}` };
}

/** Every status the operation answers, each with its body and headers: nothing else is answered. */
function responsesOf(operation: ApiOperation): Record<string, unknown> {
  const byKeyhook = operation.answeredBy === 'keyhook';
  const responses: Record<string, unknown> = {};
  for (const status of [operation.success].flat()) {
    const headers: Record<string, unknown> = { 'x-request-id': headerRef('RequestId', byKeyhook) };
    if (operation.idempotent) headers['idempotent-replayed'] = headerRef('IdempotentReplayed', false);
    if (operation.auth === 'apiKey') Object.assign(headers, rateLimitFields(false));
    responses[String(status)] = { ...successResponse(operation, status), headers };
  }
  for (const status of errorStatuses(operation)) {
    // 401, 403 and 429 come from the guard, which is keyhook's even in front of a host's route.
    const fromGuard = status === 401 || status === 403 || status === 429;
    const headers: Record<string, unknown> = {
      'x-request-id': headerRef('RequestId', byKeyhook || fromGuard),
    };
    // The portal's 403 (a permission, the origin, the CSRF token) is no bearer token's challenge.
    const bearer = operation.auth === 'admin' || operation.auth === 'apiKey';
    if (status === 401 || (status === 403 && bearer))
      headers['www-authenticate'] = headerRef('WwwAuthenticate', status === 401 || byKeyhook);
    if (status === 503) headers['retry-after'] = headerRef('RetryAfter', byKeyhook);
    if (status === 429)
      Object.assign(headers, { 'retry-after': headerRef('RetryAfter', true) }, rateLimitFields(true));
    responses[String(status)] = {
      description: ERROR_DESCRIPTIONS[status] ?? 'An error, in the one envelope.',
      headers,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  return responses;
}

/** The `RateLimit-*` fields: on every 429, and on a success when the key has a limit. */
function rateLimitFields(required: boolean): Record<string, unknown> {
  return {
    'ratelimit-limit': headerRef('RateLimitLimit', required),
    'ratelimit-remaining': headerRef('RateLimitRemaining', required),
    'ratelimit-reset': headerRef('RateLimitReset', required),
    'ratelimit-policy': headerRef('RateLimitPolicy', required),
  };
}

function errorStatuses(operation: ApiOperation): number[] {
  const statuses = new Set<number>(operation.errors ?? []);
  if (operation.auth !== 'none') statuses.add(401);
  // A key's rate limit, or its address's failed authentications.
  if (operation.auth === 'apiKey') statuses.add(429);
  if (operation.scope || operation.auth === 'portal') statuses.add(403);
  if (operation.requestBody) statuses.add(400).add(415);
  if (operation.query?.length) statuses.add(400);
  if (/:\w+/.test(operation.path)) statuses.add(404);
  if (operation.idempotent) statuses.add(409);
  if (operation.auth !== 'none' || operation.answeredBy === 'keyhook') statuses.add(500).add(503);
  return [...statuses].sort((a, b) => a - b);
}

function successResponse(operation: ApiOperation, status: number): Record<string, unknown> {
  if (status === 204) return { description: 'Done; no body.' };
  const schema = operation.produces
    ? { type: 'string' }
    : operation.response
      ? jsonSchemaOf(operation.response, 'output')
      : { type: 'object' };
  return {
    description: 'Success.',
    content: { [operation.produces ?? 'application/json']: { schema } },
  };
}

function queryParameter(name: string): Record<string, unknown> {
  const known: Record<string, Record<string, unknown>> = {
    limit: { description: '1–100; 20 when absent.', schema: { type: 'integer', minimum: 1, maximum: 100 } },
    cursor: { description: 'The nextCursor of the page before.', schema: { type: 'string' } },
    since: {
      description:
        'An RFC 3339 time: from what was created at or after it (the events feed: not with after).',
      schema: { type: 'string', format: 'date-time' },
    },
    until: {
      description: 'An RFC 3339 time: only what was created before it.',
      schema: { type: 'string', format: 'date-time' },
    },
    status: { description: 'Only deliveries in this state.', schema: { type: 'string' } },
    type: { description: 'Only events, or deliveries of events, of this type.', schema: { type: 'string' } },
    eventId: { description: 'Only the deliveries of this event.', schema: { type: 'string' } },
  };
  return { name, in: 'query', required: false, ...(known[name] ?? { schema: { type: 'string' } }) };
}

function operationId(operation: ApiOperation): string {
  const words = operation.path
    .replace(/^\/api\/v\d+/, '')
    .split('/')
    .filter((part) => part !== '')
    .map((part) => (part.startsWith(':') ? `by-${part.slice(1)}` : part));
  return [operation.method.toLowerCase(), ...words]
    .join('-')
    .replace(/[^a-zA-Z0-9]+(.)/g, (_, next: string) => next.toUpperCase());
}

/**
 * A zod schema embedded in the document, whose own dialect applies (3.1: JSON Schema 2020-12).
 * The event catalog (`keyhook.eventCatalog()`) describes event data with it too, so both agree.
 */
export function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...embedded } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return embedded;
}

function describeWebhooks(webhooks: ApiWebhooks): Record<string, unknown> {
  const headers = webhooks.headerNames;
  const header = (description: string, schema: Record<string, unknown>) => ({
    required: true,
    description,
    schema,
  });
  const described: Record<string, unknown> = {};
  for (const event of webhooks.eventCatalog()) {
    described[event.type] = {
      post: {
        operationId: `event-${event.type}`.replace(/[^a-zA-Z0-9]+(.)/g, (_, next: string) =>
          next.toUpperCase(),
        ),
        summary: event.description ?? event.type,
        tags: ['Events'],
        parameters: [
          {
            name: headers.signature,
            in: 'header',
            ...header(
              '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, keyed with the endpoint\'s whsec_ secret; one v1 per live secret.',
              {
                type: 'string',
                pattern: '^t=\\d+(,v1=[0-9a-f]{64})+$',
              },
            ),
          },
          {
            name: headers.eventId,
            in: 'header',
            ...header("The event id; the same as the body's id.", { type: 'string' }),
          },
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['id', 'type', 'createdAt', 'data'],
                properties: {
                  id: { type: 'string', description: 'Unique per event: receivers dedupe on it.' },
                  type: { type: 'string', const: event.type },
                  createdAt: { type: 'string', format: 'date-time' },
                  data: event.schema ?? { type: 'object' },
                },
              },
            },
          },
        },
        responses: {
          '2XX': { description: 'Received. Answer quickly; anything else is retried on the schedule.' },
        },
      },
    };
  }
  return described;
}
