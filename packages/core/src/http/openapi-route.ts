import { cryptoRandomBytes, systemClock } from '../clock.js';
import type { Keyhook } from '../keyhook.js';
import type { KeyhookResponse } from './messages.js';
import {
  type ApiOperation,
  type OpenApiInfo,
  type OpenApiServer,
  openApiDocument,
} from './openapi-document.js';
import { RequestIds } from './request-id.js';

/**
 * What the adapters' `openapi` option holds beyond `true` or a path: public so a host can put
 * its own routes, its title and its servers in the document its adapter serves.
 */
export interface OpenApiRouteOptions {
  /**
   * Where the document is served, from the same point as the adapter's `prefix` (so
   * `/openapi.json` is the app's root). Default `<prefix>/openapi.json`.
   */
  path?: string | undefined;
  /** Default `{ title: 'Developer API', version: '1' }`. */
  info?: OpenApiInfo | undefined;
  /** The host's own routes, at the full paths clients call, listed after keyhook's. */
  operations?: readonly ApiOperation[] | undefined;
  /** `openApiDocument`'s `servers`: the server's root by default. */
  servers?: readonly OpenApiServer[] | undefined;
}

/**
 * The OpenAPI document as a GET route, for an adapter to register as it is: public because the
 * adapters are packages of their own, and the path, the document and its headers are core's.
 */
export interface OpenApiRoute {
  /** The path to register, from the same point as the adapter's `prefix`. */
  readonly path: string;
  /**
   * The answer: the same body every time, with a request id of its own. `base` is where the framework mounted the adapter
   * ('' at the app's root, Express's `req.baseUrl`, a Fastify scope's prefix); every path the
   * document gives for keyhook's routes and for itself starts with it.
   */
  response(base?: string): KeyhookResponse;
}

const DEFAULT_INFO: OpenApiInfo = { title: 'Developer API', version: '1' };

// Bases remembered: a mount path with a parameter (Express's `/:tenant`) is a base per request.
const MAX_BASES = 8;

/**
 * The document of keyhook's routes mounted at `prefix`, the host's catalog (its scopes and
 * events), the host's `operations` and the route itself; undefined when `option` is absent or
 * `false`, so serving it is the host's choice. Built once per base, on the first request.
 * Public for the adapters, and for a host on another framework to serve the same answer.
 */
export function openApiRoute(
  keyhook: Pick<Keyhook, 'operations' | 'eventCatalog' | 'headerNames'>,
  prefix: string,
  option: boolean | string | OpenApiRouteOptions | undefined,
): OpenApiRoute | undefined {
  if (option === undefined || option === false) return undefined;
  const options = option === true ? {} : typeof option === 'string' ? { path: option } : option;
  const path = options.path ?? `${prefix}/openapi.json`;
  if (!path.startsWith('/')) throw new TypeError(`keyhook: the OpenAPI path must start with "/": "${path}"`);
  const built = new Map<string, string>();
  const requestIds = new RequestIds(systemClock, cryptoRandomBytes);
  const build = (base: string): string => {
    const self: ApiOperation = {
      method: 'GET',
      path: `${base}${path}`,
      summary: 'This document (OpenAPI 3.1)',
      success: 200,
      auth: 'none',
      tag: 'Operations',
    };
    const document = openApiDocument(
      options.info ?? DEFAULT_INFO,
      [...keyhook.operations(`${base}${prefix}`), ...(options.operations ?? []), self],
      keyhook,
      options.servers,
    );
    return JSON.stringify(document);
  };
  return {
    path,
    response(base = '') {
      let body = built.get(base);
      if (body === undefined) {
        body = build(base);
        if (built.size < MAX_BASES) built.set(base, body);
      }
      return {
        status: 200,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          // It changes only with a deploy; without `public`, no shared cache keeps one fetched with credentials.
          'cache-control': 'max-age=300',
          'x-request-id': requestIds.next(),
        },
        body,
      };
    },
  };
}
