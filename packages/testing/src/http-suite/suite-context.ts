import type { EventCatalog, Keyhook, KeyhookOptions, ScopeInput } from '@keyhook/core';
import type { Mountable, OpenApiRouteOptions } from '@keyhook/core/http';
import type { FakeClock } from '@keyhook/store-conformance/support';
import type { OpenApiContract } from '../support/openapi-contract.js';
import type { InsertGate, RotationGate } from './rotation-gate.js';

/**
 * What the adapter's test builds: a real server on 127.0.0.1, port 0, that mounts `keyhook`
 * at `prefix` and, beside it, two host routes guarded by the adapter's `requireScope`:
 *
 * - `GET  {prefix}/host/items`, scope `items:read`, answers 200 `{ apiKey }`; before the guard
 *   runs, the host sets its own `x-request-id: host-request-id` on the response, as a host with
 *   its own request ids would;
 * - `POST {prefix}/host/items`, scope `items:write`, answers 200 `{ apiKey, body }`, where
 *   `body` is what the host's own JSON body parser made of the request body.
 *
 * When `prefix` is `/api/v1` the adapter must be mounted without a prefix option, so the
 * default is what is tested. `openapi`, when present, is passed as the adapter's `openapi`
 * option; when absent, the adapter is given none. `portal` is passed as the adapter's `portal`
 * option: the suite mounts keyhook's portal API itself there, at the default `{prefix}/portal`.
 */
export interface HttpSuiteApp {
  keyhook: Keyhook;
  prefix: string;
  hostRoutes: true;
  openapi?: boolean | string | OpenApiRouteOptions;
  portal?: Mountable;
}

export interface StartedServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  baseUrl: string;
  /** Stops the server, keep-alive connections included. */
  close(): Promise<void>;
}

export interface HttpSuiteAdapter {
  name: string;
  start(app: HttpSuiteApp): Promise<StartedServer>;
}

/** Filled in afresh before every test. */
export interface SuiteContext {
  prefix: string;
  clock: FakeClock;
  keyhook: Keyhook;
  rotations: RotationGate;
  inserts: InsertGate;
  /** Every line keyhook logged during the test, as JSON. */
  logs: string[];
  baseUrl: string;
  /** The OpenAPI document of keyhook's routes and the host's two: every `call` reply is held to it. */
  contract: OpenApiContract;
  /** That document. */
  document: Record<string, unknown>;
  /**
   * A second keyhook with these options on a fresh MemoryStore and the suite's clock, served by
   * the same adapter at the same prefix (with `openapi` when given, and its portal API); closed after the test. Its
   * context for `call`. A catalog of the host's own keeps `items:read` and `items:write`, which
   * the host routes require.
   */
  serve(
    options: Partial<KeyhookOptions<readonly ScopeInput[], EventCatalog>>,
    openapi?: HttpSuiteApp['openapi'],
  ): Promise<SuiteContext>;
}
