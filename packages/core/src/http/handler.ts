import { type AdminSession, AdminSessionRejected, type AdminSessionVerifier } from '../admin/session.js';
import { type Clock, epochMs, type RandomBytes } from '../clock.js';
import { isKeyhookError, KeyhookError } from '../errors.js';
import type { ApiKeyService } from '../keys/key-service.js';
import type { LastUsedRecorder } from '../keys/last-used.js';
import {
  type FailureReservation,
  type RateLimitState,
  type RateLimits,
  rateLimitHeaders,
} from '../keys/rate-limit.js';
import type { Logger } from '../logger.js';
import { RepeatedWarning } from '../repeated-warning.js';
import type { ApiKeyRecord } from '../store/types.js';
import { assertBodyWithinLimit, hasBody, readJsonBody } from './body.js';
import { bearerToken } from './headers.js';
import type { KeyhookRequest, KeyhookResponse, RequestHeaders } from './messages.js';
import { RequestIds } from './request-id.js';
import { errorResponse, toKeyhookError } from './response.js';
import type { RouteSpec } from './route-spec.js';
import { Router } from './router.js';

/** What a guarded host route learns about its caller. */
export interface ApiKeyContext {
  tenantId: string;
  keyId: string;
  keyLookup: string;
  scopes: string[];
  expiresAt: Date | null;
}

/**
 * A guard lets the host's route answer, or answers for it. Only a refusal is keyhook's
 * response, so only a refusal carries keyhook's `x-request-id`: a guarded success is the
 * host's response, with the host's own headers (and request id, if it sets one).
 */
export type GuardResult =
  | {
      ok: true;
      apiKey: ApiKeyContext;
      /**
       * Where a rate-limited key stands in its window, with `rateLimit.successHeaders` on;
       * absent otherwise. Adapters send it as the `RateLimit-*` fields (`rateLimitHeaders`) on
       * the host's answer.
       */
      rateLimit?: RateLimitState;
    }
  /** A finished error response (401/403/503) to send as it is. */
  | { ok: false; response: KeyhookResponse };

/** The check `keyhook.guard(scope)` returns, run on each request: never throws. */
export type Guard = (headers: RequestHeaders, client?: string) => GuardResult | Promise<GuardResult>;

/** A verified key, and its rate-limit state when it has a limit. */
interface Admitted {
  key: ApiKeyRecord;
  rate: RateLimitState | undefined;
}

function passed({ key, rate }: Admitted): GuardResult {
  const apiKey = {
    tenantId: key.tenantId,
    keyId: key.id,
    keyLookup: key.keyLookup,
    scopes: key.scopes,
    expiresAt: key.expiresAt,
  };
  return rate === undefined ? { ok: true, apiKey } : { ok: true, apiKey, rateLimit: rate };
}

export interface HttpDeps {
  routes: RouteSpec[];
  keys: ApiKeyService;
  verifyAdminSession: AdminSessionVerifier;
  lastUsed: LastUsedRecorder;
  clock: Clock;
  randomBytes: RandomBytes;
  logger: Logger;
  maxBodyBytes: number;
  rateLimits: RateLimits;
  /** Counts each data-plane verification's outcome: `ok`, or the error code. */
  onAuthOutcome?: ((outcome: string) => void) | undefined;
  /**
   * Who may call the `admin` routes, in place of the admin JWT: the portal's session check
   * (portal/portal-api.ts), which also refuses what the session may not do. Throws a KeyhookError.
   */
  authorizeAdmin?: ((request: KeyhookRequest, route: RouteSpec) => Promise<AdminSession>) | undefined;
  /**
   * Headers every answer carries, errors included (the portal's API: `cache-control: no-store`
   * and `x-content-type-options: nosniff`), beside what each route sets.
   */
  everyAnswer?: Readonly<Record<string, string>> | undefined;
}

export interface HttpCore {
  handle(request: KeyhookRequest): Promise<KeyhookResponse>;
  /**
   * The data-plane guard: synchronous when the key is cached, a promise when the store is asked.
   * `client` is the caller's address, which failed verifications are counted by.
   */
  guard(headers: RequestHeaders, scope?: string, client?: string): GuardResult | Promise<GuardResult>;
}

export function createHttpCore(deps: HttpDeps): HttpCore {
  const router = new Router(deps.routes);
  const requestIds = new RequestIds(deps.clock, deps.randomBytes);

  const finish = (response: KeyhookResponse, requestId: string): KeyhookResponse => {
    response.headers['x-request-id'] = requestId;
    return response;
  };

  const outage = new RepeatedWarning(deps.logger, deps.clock);
  const fail = (error: unknown, requestId: string): KeyhookResponse => {
    const keyhookError = toKeyhookError(error);
    if (keyhookError.code === 'unavailable') {
      // Expected while the store is out of reach, and then on every request: one line, no stack, repeats counted.
      outage.warn({ requestId, cause: causeOf(keyhookError) }, 'request refused: the store is unavailable');
    } else if (keyhookError.status >= 500) {
      deps.logger.error({ err: error, requestId, code: keyhookError.code }, 'request failed');
    }
    return finish(errorResponse(keyhookError), requestId);
  };

  /** The guard's refusal is keyhook's own response: its request id is issued here, not on success. */
  const refuse = (error: unknown): GuardResult => ({ ok: false, response: fail(error, requestIds.next()) });

  /**
   * What a verified key may do: records lastUsedAt off the request path, counts the request
   * against the key's rate limit (a request refused for its scope counts too), then checks the scope.
   */
  const admit = (key: ApiKeyRecord, scope: string | undefined, nowMs: number): Admitted => {
    deps.lastUsed.record(key.id, nowMs);
    const rate = deps.rateLimits.admit(key, nowMs);
    if (scope !== undefined && !key.scopes.includes(scope)) {
      throw new KeyhookError('insufficient_scope', `This operation needs the ${scope} scope.`, {
        details: [{ message: `missing scope ${scope}`, scope }],
      });
    }
    return { key, rate };
  };

  /**
   * docs/http-api.md §5: verify the bearer key, then the scope; without a promise when the key
   * is cached.
   * `nowMs` is the request's one clock read: expiry, lastUsedAt and the request id share it.
   * With failed verifications limited, a key the store verified before is verified whatever its
   * address did; any other key is looked up only while its address has failures left
   * (keys/rate-limit.ts).
   */
  /** `verify`, with its outcome counted: `ok`, or the code it was refused with. */
  const verifyApiKey = (
    headers: RequestHeaders,
    scope: string | undefined,
    nowMs: number,
    client: string | undefined,
  ): Admitted | Promise<Admitted> => {
    const count = deps.onAuthOutcome;
    if (count === undefined) return verify(headers, scope, nowMs, client);
    let admitted: Admitted | Promise<Admitted>;
    try {
      admitted = verify(headers, scope, nowMs, client);
    } catch (error) {
      count(toKeyhookError(error).code);
      throw error;
    }
    if (!(admitted instanceof Promise)) {
      count('ok');
      return admitted;
    }
    return admitted.then(
      (result) => {
        count('ok');
        return result;
      },
      (error: unknown) => {
        count(toKeyhookError(error).code);
        throw error;
      },
    );
  };

  const verify = (
    headers: RequestHeaders,
    scope: string | undefined,
    nowMs: number,
    client: string | undefined,
  ): Admitted | Promise<Admitted> => {
    // The usual request: `Bearer ` and a key verified before. A token whose digest is cached is
    // a well-formed key, so it needs no parsing; every other request takes the full path.
    const value = headers.authorization;
    let candidate: string | undefined;
    let digest: string | undefined;
    if (typeof value === 'string' && value.startsWith('Bearer ')) {
      candidate = value.slice(7);
      digest = deps.keys.digestOf(candidate);
      const cached = deps.keys.cached(digest, nowMs);
      if (cached) return admit(cached, scope, nowMs);
    }
    const token = bearerToken(headers);
    if (token === undefined) {
      throw new KeyhookError('missing_credentials', 'Send an API key as Authorization: Bearer <API_KEY>.');
    }
    const limits = deps.rateLimits;
    const presented = token === candidate && digest !== undefined ? digest : deps.keys.digestOf(token);
    const reservation = limits.reserve(client, presented, nowMs);
    let found: ApiKeyRecord | Promise<ApiKeyRecord>;
    try {
      found = deps.keys.check(token, nowMs, presented);
    } catch (error) {
      settle(reservation, error);
      throw error;
    }
    if (!(found instanceof Promise)) {
      settle(reservation, undefined);
      return admit(found, scope, nowMs);
    }
    if (reservation === undefined) return found.then((key) => admit(key, scope, nowMs));
    return found.then(
      (key) => {
        settle(reservation, undefined);
        limits.verified(presented);
        return admit(key, scope, nowMs);
      },
      (error: unknown) => {
        settle(reservation, error);
        throw error;
      },
    );
  };

  /** A reserved failure stays counted only when the verification failed as `invalid_api_key`. */
  const settle = (reservation: FailureReservation | undefined, error: unknown) => {
    if (reservation === undefined) return;
    if (!(isKeyhookError(error) && error.code === 'invalid_api_key')) deps.rateLimits.release(reservation);
  };

  const verifyAdmin = async (headers: RequestHeaders, requestId: string) => {
    const token = bearerToken(headers);
    try {
      if (token === undefined) throw new AdminSessionRejected('no bearer token');
      return await deps.verifyAdminSession(token);
    } catch (error) {
      if (!(error instanceof AdminSessionRejected)) throw error;
      // docs/decisions.md §2.4: the log says why; the client is not told.
      deps.logger.warn({ requestId, reason: error.message }, 'admin session rejected');
      throw new KeyhookError('invalid_admin_session', 'The admin session is missing, invalid or expired.');
    }
  };

  return {
    async handle(request) {
      const nowMs = epochMs(deps.clock);
      const requestId = requestIds.next(nowMs);
      try {
        const matched = router.match(request.method, request.path);
        if (!matched) throw new KeyhookError('not_found', 'No such route.');
        const { route, params } = matched;
        const query = new URLSearchParams(request.query ?? '');
        const readBody = () => {
          if (route.body === 'json') return readJsonBody(request, deps.maxBodyBytes);
          if (route.body === 'optional-json' && hasBody(request))
            return readJsonBody(request, deps.maxBodyBytes);
          assertBodyWithinLimit(request, deps.maxBodyBytes);
          return undefined;
        };
        let response: KeyhookResponse;
        if (route.auth === 'admin') {
          const admin = deps.authorizeAdmin
            ? await deps.authorizeAdmin(request, route)
            : await verifyAdmin(request.headers, requestId);
          response = await route.run({ request, params, query, body: readBody(), admin });
          // Admin answers can carry one-time secrets: no cache may keep them.
          response.headers['cache-control'] = 'no-store';
        } else if (route.auth === 'none') {
          response = await route.run({ request, params, query, body: readBody() });
        } else {
          const { key, rate } = await verifyApiKey(
            request.headers,
            route.scope,
            nowMs,
            request.clientAddress,
          );
          response = await route.run({ request, params, query, body: readBody(), apiKey: key });
          if (rate !== undefined) Object.assign(response.headers, rateLimitHeaders(rate));
        }
        if (deps.everyAnswer) Object.assign(response.headers, deps.everyAnswer);
        return finish(response, requestId);
      } catch (error) {
        const response = fail(error, requestId);
        if (request.path.startsWith('/admin')) response.headers['cache-control'] = 'no-store';
        if (deps.everyAnswer) Object.assign(response.headers, deps.everyAnswer);
        return response;
      }
    },

    guard(headers, scope, client) {
      const nowMs = epochMs(deps.clock);
      try {
        const found = verifyApiKey(headers, scope, nowMs, client);
        return found instanceof Promise ? found.then(passed, refuse) : passed(found);
      } catch (error) {
        return refuse(error);
      }
    },
  };
}

/** What a store's `unavailable` came from, in one line: the driver's code and message, no stack. */
function causeOf(error: Error): string {
  const cause = error.cause;
  if (!(cause instanceof Error)) return error.message;
  const code = (cause as { code?: unknown }).code;
  return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message;
}
