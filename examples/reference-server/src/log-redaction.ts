import type { FastifyRequest, FastifyServerOptions } from 'fastify';

/** Fastify's `logger` option, as `buildServer` takes it. */
export type LoggerOption = FastifyServerOptions['logger'];

export const REDACTED = '[REDACTED]';

/**
 * Request headers that carry a credential. keyhook itself reads exactly one: `authorization`
 * (`Bearer <API key>` and `Bearer <admin JWT>`, core's `bearerToken`); its name is fixed, not an
 * option. The header names keyhook does let you configure (`keyhook.headerNames`) are those of
 * the webhook deliveries it sends, never read from a request. The others are the usual
 * credential carriers, redacted in case a proxy or a future route logs them.
 */
export const CREDENTIAL_HEADERS: readonly string[] = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
];

/**
 * `/path?access_token=abc&x` → `/path?access_token=[REDACTED]&[REDACTED]`: every value of the
 * query string, and a part without `=` whole (it may be a bare token). Names are kept, so a log
 * still says which parameters came; the path and the fragment's absence are kept as they were.
 */
export function redactUrl(url: string): string {
  const start = url.indexOf('?');
  if (start === -1) return url;
  const hash = url.indexOf('#', start);
  const end = hash === -1 ? url.length : hash;
  const query = url
    .slice(start + 1, end)
    .split('&')
    .map((part) => {
      if (part === '') return part;
      const eq = part.indexOf('=');
      return eq === -1 ? REDACTED : `${part.slice(0, eq + 1)}${REDACTED}`;
    })
    .join('&');
  // A fragment never reaches a server; one that does is dropped rather than logged.
  return `${url.slice(0, start + 1)}${query}${hash === -1 ? '' : `#${REDACTED}`}`;
}

// The last line of defence, on every serialised log line: whatever logged it, however.
// None of these may match a backslash or a quote, so a JSON line stays valid JSON.
const BEARER = /\b((?:bearer|basic)[ \t]+)[^\s"\\,;]+/gi;
const QUERY_VALUE = /([?&][^\s"\\=&#?]*=)[^\s"\\&#]+/g;
/** A JWS compact token: `eyJ` is base64url for `{"`, how every JOSE header begins. */
const JWT = /\beyJ[\w-]*\.[\w-]+\.[\w-]*/g;
/** keyhook's API key (core's keys/format.ts): `sk_live_<16 hex lookup>_<48 hex secret>`; the lookup is not secret. */
const API_KEY = /\b(sk_live_[0-9a-f]{16}_)[0-9a-f]{48}\b/g;

/** One serialised log line with every credential-shaped part replaced by `[REDACTED]`. */
export function redactLine(line: string): string {
  return line
    .replace(BEARER, `$1${REDACTED}`)
    .replace(QUERY_VALUE, `$1${REDACTED}`)
    .replace(JWT, REDACTED)
    .replace(API_KEY, `$1${REDACTED}`);
}

/** pino `redact` paths: the credential headers wherever a request's headers are logged. */
function headerPaths(headers: readonly string[]): string[] {
  return headers.flatMap((name) => [`headers["${name}"]`, `*.headers["${name}"]`]);
}

/** Fastify's request serializer (its `url` keeps the query string), with the query redacted. */
function requestSerializer(req: FastifyRequest) {
  return {
    method: req.method,
    url: redactUrl(req.url),
    version: [req.headers?.['accept-version']].flat()[0],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket ? req.socket.remotePort : undefined,
  };
}

/**
 * Fastify's `logger` option with credentials kept out of every line: request URLs are logged
 * with their query values redacted (a JWT sent as `?access_token=` is refused, but would
 * otherwise be logged), credential headers are redacted wherever headers are logged, and each
 * serialised line passes `redactLine` before it is written. `false` stays `false`.
 */
export function withLogRedaction(
  logger: LoggerOption,
  credentialHeaders: readonly string[] = CREDENTIAL_HEADERS,
): LoggerOption {
  if (logger === undefined || logger === false) return false;
  const options = logger === true ? {} : logger;
  const ownRequest = options.serializers?.req;
  const ownWrite = options.hooks?.streamWrite;
  const own = options.redact;
  const paths = headerPaths(credentialHeaders);
  return {
    ...options,
    serializers: {
      ...options.serializers,
      req: ownRequest
        ? (req: FastifyRequest) => {
            const out = ownRequest(req);
            return typeof out.url === 'string' ? { ...out, url: redactUrl(out.url) } : out;
          }
        : requestSerializer,
    },
    redact:
      own === undefined
        ? { paths, censor: REDACTED }
        : Array.isArray(own)
          ? { paths: [...own, ...paths], censor: REDACTED }
          : { ...own, paths: [...own.paths, ...paths] },
    hooks: {
      ...options.hooks,
      streamWrite: (line: string) => redactLine(ownWrite ? ownWrite(line) : line),
    },
  };
}
