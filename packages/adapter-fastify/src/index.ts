import type { Keyhook, ScopeOf } from '@keyhook/core';
import {
  type ApiKeyContext,
  DEFAULT_PREFIX,
  type GuardResult,
  type KeyhookRequest,
  type KeyhookResponse,
  lingerAfterAnswer,
  type Mountable,
  type OpenApiRouteOptions,
  openApiRoute,
  rateLimitHeaders,
} from '@keyhook/core/http';
import type {
  FastifyError,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
} from 'fastify';
import fastifyPlugin from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified caller, set by `requireScope`. */
    apiKey?: ApiKeyContext;
  }
}

/** Any keyhook, whatever its scopes and events. */
// biome-ignore lint/suspicious/noExplicitAny: the widest keyhook; each helper narrows by its own type.
type AnyKeyhook = Keyhook<any, any>;

export interface KeyhookFastifyOptions {
  keyhook: AnyKeyhook;
  /** Where keyhook's routes are mounted. Default `/api/v1`. */
  prefix?: string;
  /**
   * Serve the OpenAPI document: `true` at `<prefix>/openapi.json`, a path (from the same point
   * as `prefix`), or `{ path, info, operations, servers }`. Off by default.
   */
  openapi?: boolean | string | OpenApiRouteOptions;
  /**
   * The customer portal, from `@keyhook/portal`'s `keyhookPortal(keyhook, …)`: served at its
   * `path` (from the same point as `prefix`), by default `<prefix>/portal`.
   */
  portal?: Mountable;
}

type BodyError = KeyhookRequest['bodyError'];

/**
 * keyhook's routes, or the portal's, in their own encapsulated scope, so their raw-body parser
 * never reaches the host's routes.
 */
const mountableRoutes: FastifyPluginAsync<{ mountable: Mountable }> = async (scope, { mountable }) => {
  scope.removeAllContentTypeParsers();
  // Every media type, and none ('*' also serves a body without Content-Type): core judges the bytes.
  scope.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: mountable.maxBodyBytes },
    (_request, body, done) => done(null, body),
  );

  const toCore = (request: FastifyRequest, bodyError?: BodyError): KeyhookRequest => {
    // `scope.prefix` is the full mount point, including any prefix of the host's enclosing scopes.
    const url = request.url.slice(scope.prefix.length);
    const queryAt = url.indexOf('?');
    return {
      method: request.method,
      path: queryAt === -1 ? url : url.slice(0, queryAt),
      query: queryAt === -1 ? undefined : url.slice(queryAt + 1),
      headers: request.headers,
      rawBody: Buffer.isBuffer(request.body) ? request.body : null,
      bodyError,
      clientAddress: request.ip,
      basePath: scope.prefix,
    };
  };

  scope.setErrorHandler(async (error: FastifyError, request, reply) => {
    const bodyError = bodyErrorOf(error);
    // Not a body error (e.g. a host hook's): the host's own error handler answers it.
    if (bodyError === undefined) throw error;
    return send(reply, await mountable.handle(toCore(request, bodyError)), request);
  });

  for (const route of mountable.routes) {
    scope.route({
      method: route.method,
      url: route.path,
      handler: async (request, reply) => send(reply, await mountable.handle(toCore(request)), request),
    });
  }
};

const mount: FastifyPluginAsync<KeyhookFastifyOptions> = async (
  fastify,
  { keyhook, prefix = DEFAULT_PREFIX, openapi, portal },
) => {
  // Declared up front, so setting it per request keeps every request object the same shape.
  if (!fastify.hasRequestDecorator('apiKey')) fastify.decorateRequest('apiKey', undefined);
  const document = openApiRoute(keyhook, prefix, openapi);
  if (document !== undefined) {
    // The host's scope (fastify-plugin): its prefix is the one the document's paths start with.
    const response = document.response(fastify.prefix);
    fastify.get(document.path, async (request, reply) => send(reply, response, request));
  }
  if (portal !== undefined) {
    await fastify.register(mountableRoutes, { mountable: portal, prefix: portal.path ?? `${prefix}/portal` });
  }
  await fastify.register(mountableRoutes, { mountable: keyhook, prefix });
};

/**
 * Mounts keyhook's HTTP surface at `prefix` (default `/api/v1`), with `openapi` its OpenAPI
 * document, and with `portal` the customer portal.
 */
export const keyhookFastify = fastifyPlugin(mount, { fastify: '5.x', name: '@keyhook/adapter-fastify' });

/**
 * The customer portal from `@keyhook/portal` at a path of the host's own:
 * `fastify.register(keyhookPortalFastify, { portal, prefix: '/developers' })`.
 */
export const keyhookPortalFastify: FastifyPluginAsync<{ portal: Mountable }> = async (scope, { portal }) =>
  mountableRoutes(scope, { mountable: portal });

/**
 * An `onRequest` hook for the host's own data-plane routes: it lets through a caller whose API
 * key is valid and holds `scope`, and sets `request.apiKey`; anyone else gets core's answer.
 * Register it as `onRequest`, so a caller is refused before a byte of the body is read: as a
 * `preHandler` it would run after Fastify parsed the body (a warning says so, once).
 * `scope` is one of the keyhook's declared scopes: another name does not compile, and throws here.
 */
export function requireScope<K extends AnyKeyhook>(keyhook: K, scope?: ScopeOf<K>): onRequestHookHandler {
  const guard = keyhook.guard(scope);
  let warned = false;
  // Callback style: a cached key is admitted without a promise on the request's path.
  return (request, reply, done) => {
    if (!warned && request.body !== undefined) {
      warned = true;
      process.emitWarning(GUARD_AFTER_BODY, { code: 'KEYHOOK_GUARD_AFTER_BODY', type: 'KeyhookWarning' });
    }
    // `request.ip` follows the server's `trustProxy` option: failed verifications are counted by it.
    const result = guard(request.headers, request.ip);
    if (result instanceof Promise) result.then((settled) => apply(settled, request, reply, done), done);
    else apply(result, request, reply, done);
  };
}

const GUARD_AFTER_BODY =
  "requireScope ran after Fastify read the request body: register it as the route's `onRequest` hook, " +
  'not `preHandler`, so an unauthenticated request is refused before its body is read.';

/**
 * True while the client may still be sending a body nobody has read. Answer such a request with
 * `Connection: close` (keyhook's routes and `requireScope` do): otherwise Node reads and discards
 * the whole body after the answer, to keep the connection alive, and a refused client could make
 * the server read any amount of it. A host's own `onSend` hook can ask it for every answer.
 */
export function bodyUnread(request: FastifyRequest): boolean {
  const { headers } = request;
  const length = headers['content-length'];
  const declared = headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
  return declared && !request.raw.readableEnded;
}

/**
 * Lets the host's route run, or answers for it. A success adds only the `RateLimit-*` fields of
 * a rate-limited key: the rest of the response is the host's.
 */
function apply(
  result: GuardResult,
  request: FastifyRequest,
  reply: FastifyReply,
  done: (error?: FastifyError) => void,
): void {
  if (!result.ok) {
    send(reply, result.response, request); // replying from a hook: `done` is not called
    return;
  }
  if (result.rateLimit !== undefined) reply.headers(rateLimitHeaders(result.rateLimit));
  request.apiKey = result.apiKey;
  done();
}

/** Fastify's own body-reading failures, as core names them; undefined for any other error. */
function bodyErrorOf(error: FastifyError): BodyError {
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return 'too_large';
  // Content-length mismatch, an unparsable Content-Type, a broken stream.
  if (error.code?.startsWith('FST_ERR_CTP_')) return 'unreadable';
  return undefined;
}

function send(reply: FastifyReply, response: KeyhookResponse, request: FastifyRequest): FastifyReply {
  if (bodyUnread(request)) {
    reply.header('connection', 'close');
    // So that a client still sending the body reads this answer, not a reset.
    lingerAfterAnswer(request.raw.socket);
  }
  return reply
    .code(response.status)
    .headers(response.headers)
    .send(response.body ?? undefined);
}
