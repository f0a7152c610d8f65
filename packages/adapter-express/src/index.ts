import type { Keyhook, ScopeOf } from '@keyhook/core';
import {
  type ApiKeyContext,
  DEFAULT_PREFIX,
  type GuardResult,
  type HttpMethod,
  type KeyhookRequest,
  type KeyhookResponse,
  lingerAfterAnswer,
  type Mountable,
  type OpenApiRouteOptions,
  openApiRoute,
  rateLimitHeaders,
} from '@keyhook/core/http';
import { type NextFunction, type Request, type RequestHandler, type Response, Router } from 'express';

declare global {
  namespace Express {
    interface Request {
      /** The verified caller, set by `requireScope`. */
      apiKey?: ApiKeyContext;
    }
  }
}

/** Any keyhook, whatever its scopes and events. */
// biome-ignore lint/suspicious/noExplicitAny: the widest keyhook; each helper narrows by its own type.
type AnyKeyhook = Keyhook<any, any>;

export interface KeyhookRouterOptions {
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
 * A router that serves keyhook's HTTP surface at `prefix`, with `openapi` its OpenAPI document,
 * and with `portal` the customer portal; mount it with `app.use(...)`. Only keyhook's own routes
 * read the body, as raw bytes; everything else falls through.
 */
export function keyhookRouter(keyhook: AnyKeyhook, options: KeyhookRouterOptions = {}): Router {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const router = Router();
  const document = openApiRoute(keyhook, prefix, options.openapi);
  if (document !== undefined) {
    // Case-sensitive like keyhook's routes. `req.baseUrl` is the app's mount path above this
    // router: the document's paths start with it.
    router.use(
      Router({ caseSensitive: true }).get(document.path, (req, res) =>
        send(res, document.response(req.baseUrl), req),
      ),
    );
  }
  if (options.portal !== undefined) {
    router.use(options.portal.path ?? `${prefix}/portal`, routerFor(options.portal));
  }
  router.use(prefix, routerFor(keyhook));
  return router;
}

/**
 * A router that serves a `Mountable` at the point it is mounted: the customer portal from
 * `@keyhook/portal` at a path of the host's own (`app.use('/developers', portalRouter(portal))`),
 * or any route set shaped like keyhook's.
 */
export function portalRouter(portal: Mountable): Router {
  return routerFor(portal);
}

/** keyhook's routes, or the portal's: each read as raw bytes and answered by its `handle`. */
function routerFor(mountable: Mountable): Router {
  const limit = mountable.maxBodyBytes;
  // Case-sensitive like core's own router, so `/ADMIN/KEYS` falls through to the host too.
  const routes = Router({ caseSensitive: true });
  for (const route of mountable.routes) {
    routes[route.method.toLowerCase() as Lowercase<HttpMethod>](route.path, async (req, res) => {
      const bodyError = await readRawBody(req, limit);
      // An app-wide parser that ran first left an object, not bytes: core hears "unreadable".
      const consumed = req.body !== undefined && !Buffer.isBuffer(req.body);
      // Below the mount point Express strips the prefix from `req.url`; the query stays raw.
      const queryAt = req.url.indexOf('?');
      send(
        res,
        await mountable.handle({
          method: req.method,
          path: queryAt === -1 ? req.url : req.url.slice(0, queryAt),
          query: queryAt === -1 ? undefined : req.url.slice(queryAt + 1),
          headers: req.headers,
          rawBody: Buffer.isBuffer(req.body) ? req.body : null,
          bodyError: bodyError ?? (consumed ? 'unreadable' : undefined),
          clientAddress: req.ip,
          basePath: req.baseUrl,
        }),
        req,
      );
    });
  }
  return routes;
}

/**
 * Middleware for the host's own data-plane routes: it lets through a caller whose API key
 * is valid and holds `scope`, and sets `req.apiKey`; anyone else gets core's answer.
 * Put it before any body parser (`app.post(path, requireScope(...), express.json(), handler)`,
 * never an app-wide `app.use(express.json())` in front of it), so a caller is refused before a
 * byte of the body is read; placed after one, it warns once.
 * `scope` is one of the keyhook's declared scopes: another name does not compile, and throws here.
 */
export function requireScope<K extends AnyKeyhook>(keyhook: K, scope?: ScopeOf<K>): RequestHandler {
  const guard = keyhook.guard(scope);
  let warned = false;
  return (req, res, next) => {
    if (!warned && (req.body !== undefined || (declaresBody(req) && req.readableEnded))) {
      warned = true;
      process.emitWarning(GUARD_AFTER_BODY, { code: 'KEYHOOK_GUARD_AFTER_BODY', type: 'KeyhookWarning' });
    }
    // `req.ip` follows the app's `trust proxy` setting: failed verifications are counted by it.
    const result = guard(req.headers, req.ip);
    if (result instanceof Promise) result.then((settled) => apply(settled, req, res, next), next);
    else apply(result, req, res, next);
  };
}

/**
 * Lets the host's route run, or answers for it. A success adds only the `RateLimit-*` fields of
 * a rate-limited key: the rest of the response is the host's.
 */
function apply(result: GuardResult, req: Request, res: Response, next: NextFunction): void {
  if (!result.ok) {
    send(res, result.response, req);
    return;
  }
  if (result.rateLimit !== undefined) res.set(rateLimitHeaders(result.rateLimit));
  req.apiKey = result.apiKey;
  next();
}

const GUARD_AFTER_BODY =
  'requireScope ran after a body parser read the request body: put it before the parser ' +
  '(app.post(path, requireScope(...), express.json(), handler)), so an unauthenticated request ' +
  'is refused before its body is read.';

/** A body is coming (or came): `Transfer-Encoding`, or a `Content-Length` above 0. */
function declaresBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Reads the body as bytes into `req.body`, up to `limit`, and never past it. body-parser, on a
 * body over its limit, reads the rest of it before it answers; a refused client must not make
 * the server read any amount, so here an oversize body is left unread (and `send` then closes
 * the connection). No inflate: core gets the bytes the client sent, as the Fastify adapter does.
 */
function readRawBody(req: Request, limit: number): Promise<BodyError> {
  // An app-wide parser that ran first has the body; the handler tells core "unreadable".
  if (req.readableEnded || req.body !== undefined) return Promise.resolve(undefined);
  const length = req.headers['content-length'];
  // Like body-parser's hasBody: a Content-Length (even 0) or a Transfer-Encoding means a body.
  if (length === undefined && req.headers['transfer-encoding'] === undefined)
    return Promise.resolve(undefined);
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return Promise.resolve('unreadable');
  if (length !== undefined && Number(length) > limit) return Promise.resolve('too_large');
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const finish = (error: BodyError) => {
      req
        .off('data', onData)
        .off('end', onEnd)
        .off('error', onError)
        .off('aborted', onError)
        .off('close', onError);
      // Stop reading: what is left stays unread, and the answer closes the connection.
      if (error !== undefined) req.pause();
      resolve(error);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) return finish('too_large');
      chunks.push(chunk);
    };
    const onEnd = () => {
      req.body = Buffer.concat(chunks, received);
      finish(undefined);
    };
    const onError = () => finish('unreadable');
    // 'close' before 'end': the client went away mid-body.
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onError).on('close', onError);
  });
}

/**
 * writeHead + end, not res.send: no ETag, no 304, no charset rewrite — core's response as it is.
 * A body left unread ends the connection: otherwise Node reads and discards all of it after the
 * answer, to keep the connection alive, and a refused client could make the server read any amount.
 * It ends by lingering (docs/decisions.md §1.5).
 */
function send(res: Response, response: KeyhookResponse, req: Request): void {
  const unread = declaresBody(req) && !req.readableEnded;
  // So that a client still sending the body reads this answer, not a reset.
  if (unread) lingerAfterAnswer(req.socket);
  const headers = unread ? { ...response.headers, connection: 'close' } : response.headers;
  res.writeHead(response.status, headers).end(response.body ?? undefined);
}
