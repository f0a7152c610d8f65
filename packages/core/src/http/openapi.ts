import { z } from 'zod';
import type { EventDoc } from '../catalog/events.js';
import type { DeliveryHeaderNames } from '../delivery/signature.js';
import type { HttpMethod } from './types.js';

/** One operation as the OpenAPI document describes it: keyhook's own routes, or a host's. */
export interface ApiOperation {
  method: HttpMethod;
  /** The full path, `:name` marking a parameter (`/api/v1/admin/keys/:keyId`). */
  path: string;
  summary: string;
  /** The success status; 204 has no body. */
  success: number;
  /** The JSON body's zod schema: the one the route validates with. */
  requestBody?: z.ZodType | undefined;
  query?: readonly string[] | undefined;
  /** Who may call it: an admin session, any API key (with `scope` when it needs one), or anyone. */
  auth: 'admin' | 'apiKey' | 'none';
  scope?: string | undefined;
  /** An `Idempotency-Key` header is honoured. */
  idempotent?: boolean | undefined;
  /** The group it is listed under. */
  tag: string;
  /** For a route that is not JSON: its success content type. */
  produces?: string | undefined;
}

/** A host's events and delivery headers: the document's 3.1 `webhooks` section (`keyhook.eventDocs()`). */
export interface ApiWebhooks {
  events: readonly EventDoc[];
  headers: Readonly<DeliveryHeaderNames>;
}

export interface OpenApiInfo {
  title: string;
  version: string;
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
        code: { type: 'string', description: 'From the closed list of DESIGN.md §2, or the host’s own.' },
        message: { type: 'string' },
        details: { type: 'array', items: { type: 'object' } },
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
    paths,
    ...(webhooks && { webhooks: describeWebhooks(webhooks) }),
    components: {
      schemas: { Error: ERROR_SCHEMA },
      securitySchemes: {
        adminSession: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'An admin-portal session (DESIGN.md §4): the tenant comes from its tenant claim.',
        },
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'sk_live_<16 hex>_<48 hex>',
          description: 'A Developer API key (spec §2, §5).',
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
    responses: {
      [String(operation.success)]: successResponse(operation),
      default: {
        description: 'An error, in the one envelope (DESIGN.md §2), with an x-request-id header.',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    },
  };
  if (operation.auth !== 'none')
    described['security'] = [{ [operation.auth === 'admin' ? 'adminSession' : 'apiKey']: [] }];
  if (operation.scope) described['x-required-scope'] = operation.scope;
  if (operation.requestBody) {
    const schema = jsonSchemaOf(operation.requestBody, 'input');
    described['requestBody'] = { required: true, content: { 'application/json': { schema } } };
  }
  return described;
}

function successResponse(operation: ApiOperation): Record<string, unknown> {
  if (operation.success === 204) return { description: 'Done; no body.' };
  return {
    description: 'Success.',
    content: {
      [operation.produces ?? 'application/json']: {
        schema: operation.produces ? { type: 'string' } : { type: 'object' },
      },
    },
  };
}

function queryParameter(name: string): Record<string, unknown> {
  const known: Record<string, Record<string, unknown>> = {
    limit: { description: '1–100; 20 when absent.', schema: { type: 'integer', minimum: 1, maximum: 100 } },
    cursor: { description: 'The nextCursor of the page before.', schema: { type: 'string' } },
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

/** A zod schema embedded in the document, whose own dialect applies (3.1: JSON Schema 2020-12). */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...embedded } = z.toJSONSchema(schema, { io, unrepresentable: 'any' });
  return embedded;
}

function describeWebhooks({ events, headers }: ApiWebhooks): Record<string, unknown> {
  const header = (description: string, schema: Record<string, unknown>) => ({
    required: true,
    description,
    schema,
  });
  const described: Record<string, unknown> = {};
  for (const event of events) {
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
                  data: event.data ? jsonSchemaOf(event.data, 'output') : { type: 'object' },
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
