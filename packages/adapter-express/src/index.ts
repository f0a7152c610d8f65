import {
  type ApiKeyContext,
  DEFAULT_PREFIX,
  type GuardResult,
  type HttpMethod,
  type Keyhook,
  type KeyhookRequest,
  type KeyhookResponse,
  type ScopeOf,
} from '@keyhook/core';
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
  Router,
} from 'express';

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
}

type BodyError = KeyhookRequest['bodyError'];

/**
 * A router that serves keyhook's HTTP surface at `prefix`; mount it with `app.use(...)`.
 * Only keyhook's own routes read the body, as raw bytes; everything else falls through.
 */
export function keyhookRouter(keyhook: AnyKeyhook, options: KeyhookRouterOptions = {}): Router {
  // No inflate: core gets the bytes the client sent, as the Fastify adapter does.
  const readRaw = express.raw({ type: () => true, limit: keyhook.maxBodyBytes, inflate: false });
  const readBody = (req: Request, res: Response) =>
    new Promise<BodyError>((resolve) => {
      readRaw(req, res, (error?: unknown) => resolve(error === undefined ? undefined : bodyErrorOf(error)));
    });

  // Case-sensitive like core's own router, so `/ADMIN/KEYS` falls through to the host too.
  const routes = Router({ caseSensitive: true });
  for (const route of keyhook.routes) {
    routes[route.method.toLowerCase() as Lowercase<HttpMethod>](route.path, async (req, res) => {
      const bodyError = await readBody(req, res);
      // An app-wide parser that ran first left an object, not bytes: core hears "unreadable".
      const consumed = req.body !== undefined && !Buffer.isBuffer(req.body);
      // Below the mount point Express strips the prefix from `req.url`; the query stays raw.
      const queryAt = req.url.indexOf('?');
      send(
        res,
        await keyhook.handle({
          method: req.method,
          path: queryAt === -1 ? req.url : req.url.slice(0, queryAt),
          query: queryAt === -1 ? undefined : req.url.slice(queryAt + 1),
          headers: req.headers,
          rawBody: Buffer.isBuffer(req.body) ? req.body : null,
          bodyError: bodyError ?? (consumed ? 'unreadable' : undefined),
        }),
      );
    });
  }

  const router = Router();
  router.use(options.prefix ?? DEFAULT_PREFIX, routes);
  return router;
}

/**
 * Middleware for the host's own data-plane routes: it lets through a caller whose API key
 * is valid and holds `scope`, and sets `req.apiKey`; anyone else gets core's answer.
 * `scope` is one of the keyhook's declared scopes: another name does not compile, and throws here.
 */
export function requireScope<K extends AnyKeyhook>(keyhook: K, scope?: ScopeOf<K>): RequestHandler {
  const guard = keyhook.guardFor(scope);
  return (req, res, next) => {
    const result = guard(req.headers);
    if (result instanceof Promise) result.then((settled) => apply(settled, req, res, next), next);
    else apply(result, req, res, next);
  };
}

/** Lets the host's route run, or answers for it. A success adds no header: the response is the host's. */
function apply(result: GuardResult, req: Request, res: Response, next: NextFunction): void {
  if (!result.ok) {
    send(res, result.response);
    return;
  }
  req.apiKey = result.apiKey;
  next();
}

/** body-parser's failures, as core names them. */
function bodyErrorOf(error: unknown): BodyError {
  const type = (error as { type?: unknown } | null)?.type;
  return type === 'entity.too.large' ? 'too_large' : 'unreadable';
}

// writeHead + end, not res.send: no ETag, no 304, no charset rewrite — core's response as it is.
function send(res: Response, response: KeyhookResponse): void {
  res.writeHead(response.status, response.headers).end(response.body ?? undefined);
}
