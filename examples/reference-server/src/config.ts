import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { MIN_LIST_BYTE_BUDGET } from '@keyhook/core/http';
import {
  DEFAULT_CONNECTION_TIMEOUT_MS,
  DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  DEFAULT_STATEMENT_TIMEOUT_MS,
} from '@keyhook/store-postgres';
import { parseDuration } from './duration.js';

export type StoreConfig =
  | { kind: 'sqlite'; filename: string }
  | {
      kind: 'postgres';
      connectionString: string;
      schema: string;
      /** KEYHOOK_PG_STATEMENT_TIMEOUT, in ms (0: off); the store's default unless set. */
      statementTimeoutMs: number;
      /** KEYHOOK_PG_IDLE_IN_TRANSACTION_TIMEOUT, in ms (0: off); the store's default unless set. */
      idleInTransactionTimeoutMs: number;
      /** KEYHOOK_PG_CONNECT_TIMEOUT, in ms: how long a request waits for a connection. */
      connectTimeoutMs: number;
    };

/** How admin JWTs are verified (docs/decisions.md §2.1): a shared HS256 secret or a JWKS URL. */
export type AdminAuthConfig = (
  | {
      kind: 'secret';
      secret: string;
      /** True when no secret was configured and this process made one up (development only). */
      generated: boolean;
    }
  | { kind: 'jwks'; jwksUrl: string }
) & { issuer?: string; audience?: string };

export interface ServerConfig {
  port: number;
  host: string;
  /** `NODE_ENV=production`, in any case; NODE_ENV must be production, development or test. */
  production: boolean;
  store: StoreConfig;
  admin: AdminAuthConfig;
  /** KEYHOOK_ADMIN_JWT_MAX_LIFETIME: the longest `exp - iat` an admin JWT may have, in seconds; 24 h unless set. */
  adminMaxTokenLifetimeSeconds: number;
  /**
   * Where development keeps its encryption key file: the SQLite file's directory, or `./data`
   * (against the working directory) for Postgres.
   */
  dataDir: string;
  /**
   * The master key for secrets at rest (docs/decisions.md §4). Required in production; null in
   * development means "use the key kept in the data directory" (encryption-key.ts).
   */
  encryptionKey: Buffer | null;
  /** Earlier master keys, comma-separated in KEYHOOK_PREVIOUS_ENCRYPTION_KEYS: they still open old values. */
  previousEncryptionKeys: Buffer[];
  /**
   * KEYHOOK_RETRY_SCHEDULE: the waits after each failed attempt. Unset: the spec's, six retries
   * at 1m, 5m, 15m, 1h, 3h and 6h (data-plane.md §7.1), not the library's longer default.
   */
  retryScheduleMs: number[];
  /** KEYHOOK_DELIVERY_TIMEOUT: one attempt's limit; null for 10 s. */
  deliveryTimeoutMs: number | null;
  /** KEYHOOK_RETENTION: how long finished deliveries, their attempts and events are kept; null for 30 days. */
  retentionMs: number | null;
  /**
   * How long a client may take (server.ts, data-plane.md §7.4): KEYHOOK_HEADERS_TIMEOUT for its
   * headers, KEYHOOK_REQUEST_TIMEOUT for the whole request (body included), KEYHOOK_IDLE_TIMEOUT
   * for a connection on which nothing arrives.
   */
  timeouts: ServerTimeouts;
  /**
   * KEYHOOK_RATE_LIMIT: the limit of a key without its own, `<requests>/<window>` like 1000/1m;
   * null (unset or `off`) leaves such keys unlimited.
   */
  keyRateLimit: RateLimitConfig | null;
  /**
   * KEYHOOK_FAILED_AUTH_LIMIT: failed API-key verifications allowed per client address, like
   * 100/1m (the default); null with `off`.
   */
  failedAuthLimit: RateLimitConfig | null;
  /**
   * KEYHOOK_TRUST_PROXY, passed to Fastify's `trustProxy`: `true`, a hop count, or
   * comma-separated proxy addresses or CIDR ranges. Unset: the peer's address is the client's.
   */
  trustProxy: boolean | number | string;
  /**
   * KEYHOOK_METRICS_PORT: where Prometheus text is served at `/metrics`, on HOST, never on the
   * API's port; null (unset) serves no metrics.
   */
  metricsPort: number | null;
  /**
   * KEYHOOK_LIST_BYTE_BUDGET: a list page's byte budget (createKeyhook's `listByteBudget`, which
   * the data plane's lists use too), like 1048576, 512KiB or 4MiB; null (unset) for 1 MiB.
   */
  listByteBudget: number | null;
  /**
   * What goes out over OTLP/HTTP (README "OpenTelemetry"), from the standard `OTEL_*` variables.
   * Only the choices this server makes itself are here; the exporters read the rest (headers,
   * timeouts, compression, each signal's URL) from the process environment on their own.
   */
  otlp: OtlpConfig;
}

/** The OTLP/HTTP encodings there are exporters for here: protobuf (OpenTelemetry's default) and JSON. */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface OtlpConfig {
  /** null: no metrics over OTLP (no endpoint for them, OTEL_METRICS_EXPORTER=none, or OTEL_SDK_DISABLED=true). */
  metrics: OtlpMetricsConfig | null;
  /** null: no traces over OTLP (no endpoint for them, OTEL_TRACES_EXPORTER=none, or OTEL_SDK_DISABLED=true). */
  traces: { protocol: OtlpProtocol } | null;
}

export interface OtlpMetricsConfig {
  protocol: OtlpProtocol;
  /** OTEL_METRIC_EXPORT_INTERVAL: between two exports. */
  exportIntervalMs: number;
  /** OTEL_METRIC_EXPORT_TIMEOUT: one collection and export, never longer than the interval. */
  exportTimeoutMs: number;
}

/** `{ limit, window }`, window in seconds, as `createKeyhook({ rateLimit })` takes it. */
export interface RateLimitConfig {
  limit: number;
  window: number;
}

/** Every problem found in the environment, so an operator fixes them in one go. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

export const DEFAULT_PORT = 3000;
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_SQLITE_PATH = './data/keyhook.db';
export const DEFAULT_PG_SCHEMA = 'keyhook';
/** A day: what `createAdminToken` mints at most, and longer than the 12 h development token. */
export const DEFAULT_ADMIN_MAX_TOKEN_LIFETIME_SECONDS = 24 * 60 * 60;
const NODE_ENVS = ['production', 'development', 'test'] as const;

/** The spec's retry schedule: this server's default (data-plane.md §7.1). */
export const SPEC_RETRY_SCHEDULE_MS = [60_000, 300_000, 900_000, 3_600_000, 10_800_000, 21_600_000];
/** What core's `delivery.retrySchedule` takes at most. */
const MAX_RETRIES = 12;
const MIN_SECRET_BYTES = 32; // core refuses shorter HS256 secrets
const PG_SCHEMA = /^[a-z_][a-z0-9_]{0,62}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export interface LoadConfigOptions {
  /** Relative SQLite paths resolve against this. Default `process.cwd()`. */
  cwd?: string;
  /** Makes the development admin secret. Default: 32 random bytes, base64url. */
  generateSecret?: () => string;
}

/**
 * Reads the environment of data-plane.md §7.1. An empty variable counts as unset, as it does
 * in most `.env` tooling. Error messages never repeat a value that may hold a secret.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  options: LoadConfigOptions = {},
): ServerConfig {
  const problems: string[] = [];
  const read = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const production = parseNodeEnv(read('NODE_ENV'), problems) === 'production';

  const port = parsePort(read('PORT'), problems);
  const host = read('HOST') ?? DEFAULT_HOST;
  if (/\s/.test(host)) problems.push('HOST must be a host name or IP address without spaces');

  const store = parseStore(read, options.cwd ?? process.cwd(), problems);
  const admin = parseAdmin(read, production, options.generateSecret ?? defaultSecret, problems);
  const adminMaxTokenLifetimeSeconds = parseMaxTokenLifetime(
    read('KEYHOOK_ADMIN_JWT_MAX_LIFETIME'),
    problems,
  );

  const encryptionKey = parseEncryptionKey(
    read('KEYHOOK_ENCRYPTION_KEY'),
    'KEYHOOK_ENCRYPTION_KEY',
    problems,
  );
  if (production && encryptionKey === null && read('KEYHOOK_ENCRYPTION_KEY') === undefined) {
    problems.push(
      'KEYHOOK_ENCRYPTION_KEY is required when NODE_ENV=production (e.g. `openssl rand -base64 32`)',
    );
  }
  const previousEncryptionKeys = (read('KEYHOOK_PREVIOUS_ENCRYPTION_KEYS') ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .flatMap((part) => parseEncryptionKey(part, 'KEYHOOK_PREVIOUS_ENCRYPTION_KEYS', problems) ?? []);
  const retryScheduleMs = parseRetrySchedule(read('KEYHOOK_RETRY_SCHEDULE'), problems);
  const timeoutText = read('KEYHOOK_DELIVERY_TIMEOUT');
  const deliveryTimeoutMs = timeoutText === undefined ? null : parseDuration(timeoutText);
  if (timeoutText !== undefined && deliveryTimeoutMs === null) {
    problems.push(
      `KEYHOOK_DELIVERY_TIMEOUT must be a positive duration like 10s or 500ms, got "${timeoutText}"`,
    );
  }

  const retentionText = read('KEYHOOK_RETENTION');
  const retentionMs = retentionText === undefined ? null : parseDuration(retentionText);
  if (retentionText !== undefined && (retentionMs === null || retentionMs < 1000)) {
    problems.push(
      `KEYHOOK_RETENTION must be a duration of at least 1s, like 30d or 12h, got "${retentionText}"`,
    );
  }

  const timeouts = parseTimeouts(read, problems);
  const keyRateLimit = parseRateLimit('KEYHOOK_RATE_LIMIT', read('KEYHOOK_RATE_LIMIT'), null, problems);
  const failedAuthLimit = parseRateLimit(
    'KEYHOOK_FAILED_AUTH_LIMIT',
    read('KEYHOOK_FAILED_AUTH_LIMIT'),
    DEFAULT_FAILED_AUTH_LIMIT,
    problems,
  );
  const trustProxy = parseTrustProxy(read('KEYHOOK_TRUST_PROXY'));
  const metricsText = read('KEYHOOK_METRICS_PORT');
  const metricsPort = metricsText === undefined ? null : parseMetricsPort(metricsText, problems);
  const otlp = parseOtlp(read, problems);
  const budgetText = read('KEYHOOK_LIST_BYTE_BUDGET');
  const listByteBudget = budgetText === undefined ? null : parseListByteBudget(budgetText, problems);

  if (problems.length > 0 || admin === null) throw new ConfigError(problems);
  return {
    port,
    host,
    production,
    store,
    admin,
    adminMaxTokenLifetimeSeconds,
    dataDir:
      store.kind === 'sqlite'
        ? path.dirname(store.filename)
        : path.resolve(options.cwd ?? process.cwd(), 'data'),
    encryptionKey,
    previousEncryptionKeys,
    retryScheduleMs,
    deliveryTimeoutMs,
    retentionMs,
    timeouts,
    keyRateLimit,
    failedAuthLimit,
    trustProxy,
    metricsPort,
    listByteBudget,
    otlp,
  };
}

const BYTE_UNITS: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 * 1024 };

function parseListByteBudget(text: string, problems: string[]): number | null {
  const match = /^(\d{1,10})(KiB|MiB)?$/.exec(text);
  const bytes = match ? Number(match[1]) * BYTE_UNITS[match[2] ?? '']! : Number.NaN;
  if (!(Number.isSafeInteger(bytes) && bytes >= MIN_LIST_BYTE_BUDGET)) {
    problems.push(
      `KEYHOOK_LIST_BYTE_BUDGET must be bytes, at least ${MIN_LIST_BYTE_BUDGET} (16KiB), like 1048576, 512KiB or 4MiB, got "${text}"`,
    );
    return null;
  }
  return bytes;
}

function parseMetricsPort(text: string, problems: string[]): number | null {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65_535)) {
    problems.push(`KEYHOOK_METRICS_PORT must be an integer from 1 to 65535, got "${text}"`);
    return null;
  }
  return port;
}

/** The OpenTelemetry specification's defaults for the periodic metric reader. */
export const DEFAULT_METRIC_EXPORT_INTERVAL_MS = 60_000;
export const DEFAULT_METRIC_EXPORT_TIMEOUT_MS = 30_000;
const OTLP_PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];
const OTLP_OFF: OtlpConfig = { metrics: null, traces: null };
/** setInterval's limit: a longer interval would fire at once, over and over. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A signal goes out over OTLP when an endpoint is set for it (the generic one or its own):
 * without one nothing is sent, and no other `OTEL_*` variable is read, so a shell's leftovers
 * cannot stop a server that exports nothing. With one, a value this server cannot honour
 * (gRPC, another exporter) stops the start rather than being dropped in silence.
 */
function parseOtlp(read: (name: string) => string | undefined, problems: string[]): OtlpConfig {
  const generic = read('OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined;
  const metricsWanted = generic || read('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT') !== undefined;
  const tracesWanted = generic || read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined;
  if (!metricsWanted && !tracesWanted) return OTLP_OFF;
  if (parseSdkDisabled(read('OTEL_SDK_DISABLED'), problems)) return OTLP_OFF;
  const metricsOn =
    metricsWanted &&
    exporterSelected(
      'OTEL_METRICS_EXPORTER',
      read('OTEL_METRICS_EXPORTER'),
      ' (KEYHOOK_METRICS_PORT serves Prometheus text)',
      problems,
    );
  const tracesOn =
    tracesWanted && exporterSelected('OTEL_TRACES_EXPORTER', read('OTEL_TRACES_EXPORTER'), '', problems);
  return {
    metrics: metricsOn
      ? { protocol: parseProtocol('METRICS', read, problems), ...parseMetricExportTiming(read, problems) }
      : null,
    traces: tracesOn ? { protocol: parseProtocol('TRACES', read, problems) } : null,
  };
}

/** The specification's boolean: `true` or `false` in any case; anything else is refused, not read as false. */
function parseSdkDisabled(text: string | undefined, problems: string[]): boolean {
  if (text === undefined || text.toLowerCase() === 'false') return false;
  if (text.toLowerCase() === 'true') return true;
  problems.push(`OTEL_SDK_DISABLED must be true or false, got "${text}"`);
  return false;
}

/** OTEL_METRICS_EXPORTER / OTEL_TRACES_EXPORTER: `otlp` (or unset) sends, `none` does not. */
function exporterSelected(name: string, text: string | undefined, hint: string, problems: string[]): boolean {
  if (text === undefined) return true;
  const exporters = text
    .toLowerCase()
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (exporters.length === 1 && exporters[0] === 'none') return false;
  if (exporters.length > 0 && exporters.every((exporter) => exporter === 'otlp')) return true;
  problems.push(`${name} must be otlp or none: this server exports over OTLP only${hint}; got "${text}"`);
  return false;
}

/** The signal's own OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else the generic one, else http/protobuf. */
function parseProtocol(
  signal: 'METRICS' | 'TRACES',
  read: (name: string) => string | undefined,
  problems: string[],
): OtlpProtocol {
  const own = `OTEL_EXPORTER_OTLP_${signal}_PROTOCOL`;
  const name = read(own) === undefined ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : own;
  const text = read(name);
  if (text === undefined) return 'http/protobuf';
  const protocol = OTLP_PROTOCOLS.find((known) => known === text.toLowerCase());
  if (protocol !== undefined) return protocol;
  // Both signals may take the generic variable: name it once.
  const problem = `${name} must be http/protobuf or http/json (this server does not export over gRPC), got "${text}"`;
  if (!problems.includes(problem)) problems.push(problem);
  return 'http/protobuf';
}

/**
 * OTEL_METRIC_EXPORT_INTERVAL and OTEL_METRIC_EXPORT_TIMEOUT, in milliseconds: the SDK's reader
 * takes them as options only. A timeout longer than the interval is cut to it, as the reader
 * does with its own default (given both, it would refuse the pair).
 */
function parseMetricExportTiming(
  read: (name: string) => string | undefined,
  problems: string[],
): Pick<OtlpMetricsConfig, 'exportIntervalMs' | 'exportTimeoutMs'> {
  const one = (name: string, fallback: number): number => {
    const text = read(name);
    if (text === undefined) return fallback;
    const ms = /^\d{1,10}$/.test(text) ? Number(text) : Number.NaN;
    if (ms >= 1 && ms <= MAX_TIMER_MS) return ms;
    problems.push(`${name} must be a whole number of milliseconds from 1 to ${MAX_TIMER_MS}, got "${text}"`);
    return fallback;
  };
  const exportIntervalMs = one('OTEL_METRIC_EXPORT_INTERVAL', DEFAULT_METRIC_EXPORT_INTERVAL_MS);
  const exportTimeoutMs = one('OTEL_METRIC_EXPORT_TIMEOUT', DEFAULT_METRIC_EXPORT_TIMEOUT_MS);
  return { exportIntervalMs, exportTimeoutMs: Math.min(exportTimeoutMs, exportIntervalMs) };
}

/** 100 failed verifications a minute per address: far above a client with a stale key, far below a guesser. */
export const DEFAULT_FAILED_AUTH_LIMIT: RateLimitConfig = { limit: 100, window: 60 };

const MAX_WINDOW_SECONDS = 86_400;
const MAX_LIMIT = 1_000_000_000;

/** `<requests>/<window>` (`100/1m`, `5000/1h`, `10/30s`), or `off`. */
function parseRateLimit(
  name: string,
  text: string | undefined,
  fallback: RateLimitConfig | null,
  problems: string[],
): RateLimitConfig | null {
  if (text === undefined) return fallback;
  if (text.toLowerCase() === 'off') return null;
  const match = /^(\d{1,10})\/(.+)$/.exec(text);
  const limit = match ? Number(match[1]) : Number.NaN;
  const windowMs = match ? parseDuration(match[2]!) : null;
  if (
    !(limit >= 1 && limit <= MAX_LIMIT) ||
    windowMs === null ||
    windowMs % 1000 !== 0 ||
    windowMs / 1000 > MAX_WINDOW_SECONDS
  ) {
    problems.push(
      `${name} must be <requests>/<window> like 100/1m (1 to ${MAX_LIMIT} requests, a window of whole seconds up to 24h), or off; got "${text}"`,
    );
    return fallback;
  }
  return { limit, window: windowMs / 1000 };
}

function parseTrustProxy(text: string | undefined): boolean | number | string {
  if (text === undefined || text.toLowerCase() === 'false') return false;
  if (text.toLowerCase() === 'true') return true;
  return /^\d+$/.test(text) ? Number(text) : text;
}

export interface ServerTimeouts {
  headersMs: number;
  requestMs: number;
  idleMs: number;
}

/** data-plane.md §7.4: like nginx's client and send timeouts. */
export const DEFAULT_TIMEOUTS: ServerTimeouts = { headersMs: 10_000, requestMs: 60_000, idleMs: 60_000 };

function parseTimeouts(read: (name: string) => string | undefined, problems: string[]): ServerTimeouts {
  const one = (name: string, fallback: number): number => {
    const text = read(name);
    if (text === undefined) return fallback;
    const ms = parseDuration(text);
    if (ms === null) problems.push(`${name} must be a positive duration like 10s or 500ms, got "${text}"`);
    return ms ?? fallback;
  };
  const timeouts = {
    headersMs: one('KEYHOOK_HEADERS_TIMEOUT', DEFAULT_TIMEOUTS.headersMs),
    requestMs: one('KEYHOOK_REQUEST_TIMEOUT', DEFAULT_TIMEOUTS.requestMs),
    idleMs: one('KEYHOOK_IDLE_TIMEOUT', DEFAULT_TIMEOUTS.idleMs),
  };
  // Node refuses a headers timeout longer than the request's: the request's includes its headers.
  if (timeouts.headersMs > timeouts.requestMs) {
    problems.push('KEYHOOK_HEADERS_TIMEOUT must not be longer than KEYHOOK_REQUEST_TIMEOUT');
  }
  return timeouts;
}

/**
 * Read case-insensitively (`Production` is production), and anything but production,
 * development or test refused: a misspelt value must not silently run in development mode.
 */
function parseNodeEnv(text: string | undefined, problems: string[]): (typeof NODE_ENVS)[number] {
  if (text === undefined) return 'development';
  const value = NODE_ENVS.find((known) => known === text.toLowerCase());
  if (value === undefined) {
    problems.push(`NODE_ENV must be production, development or test (in any case), got "${text}"`);
    return 'development';
  }
  return value;
}

function parseMaxTokenLifetime(text: string | undefined, problems: string[]): number {
  if (text === undefined) return DEFAULT_ADMIN_MAX_TOKEN_LIFETIME_SECONDS;
  const ms = parseDuration(text);
  if (ms === null || ms % 1000 !== 0) {
    problems.push(
      `KEYHOOK_ADMIN_JWT_MAX_LIFETIME must be a whole number of seconds or more, like 24h, 15m or 3600s, got "${text}"`,
    );
    return DEFAULT_ADMIN_MAX_TOKEN_LIFETIME_SECONDS;
  }
  return ms / 1000;
}

function parsePort(text: string | undefined, problems: string[]): number {
  if (text === undefined) return DEFAULT_PORT;
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 0 && port <= 65_535)) {
    problems.push(`PORT must be an integer from 0 to 65535 (0 picks a free port), got "${text}"`);
    return DEFAULT_PORT;
  }
  return port;
}

function parseStore(
  read: (name: string) => string | undefined,
  cwd: string,
  problems: string[],
): StoreConfig {
  const databaseUrl = read('DATABASE_URL');
  const schema = read('KEYHOOK_PG_SCHEMA') ?? DEFAULT_PG_SCHEMA;
  if (!PG_SCHEMA.test(schema)) {
    problems.push(
      `KEYHOOK_PG_SCHEMA must be a lowercase SQL identifier (a-z, 0-9, _; at most 63), got "${schema}"`,
    );
  }
  if (databaseUrl !== undefined) {
    // The URL may carry a password: say what is wrong, never echo it.
    if (!/^postgres(ql)?:\/\//i.test(databaseUrl) || !URL.canParse(databaseUrl)) {
      problems.push(
        'DATABASE_URL must be a postgres:// or postgresql:// URL (unset it to use SQLite at KEYHOOK_SQLITE_PATH)',
      );
    }
    return {
      kind: 'postgres',
      connectionString: databaseUrl,
      schema,
      statementTimeoutMs: parseBound(
        read,
        'KEYHOOK_PG_STATEMENT_TIMEOUT',
        DEFAULT_STATEMENT_TIMEOUT_MS,
        problems,
      ),
      idleInTransactionTimeoutMs: parseBound(
        read,
        'KEYHOOK_PG_IDLE_IN_TRANSACTION_TIMEOUT',
        DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
        problems,
      ),
      connectTimeoutMs: parseBound(
        read,
        'KEYHOOK_PG_CONNECT_TIMEOUT',
        DEFAULT_CONNECTION_TIMEOUT_MS,
        problems,
        false,
      ),
    };
  }
  const filename = read('KEYHOOK_SQLITE_PATH') ?? DEFAULT_SQLITE_PATH;
  return { kind: 'sqlite', filename: path.resolve(cwd, filename) };
}

/** A bound on Postgres (docs/decisions.md §20.2): a duration, or `off` where `offAllowed`. */
function parseBound(
  read: (name: string) => string | undefined,
  name: string,
  fallback: number,
  problems: string[],
  offAllowed = true,
): number {
  const text = read(name);
  if (text === undefined) return fallback;
  if (offAllowed && text.trim().toLowerCase() === 'off') return 0;
  const ms = parseDuration(text);
  if (ms === null || ms > MAX_TIMER_MS) {
    problems.push(
      `${name} must be a duration like 5s or 500ms${offAllowed ? ', or off' : ''}, got "${text}"`,
    );
    return fallback;
  }
  return ms;
}

function parseAdmin(
  read: (name: string) => string | undefined,
  production: boolean,
  generateSecret: () => string,
  problems: string[],
): AdminAuthConfig | null {
  const secret = read('KEYHOOK_ADMIN_JWT_SECRET');
  const jwksUrl = read('KEYHOOK_ADMIN_JWKS_URL');
  const issuer = read('KEYHOOK_ADMIN_JWT_ISSUER');
  const audience = read('KEYHOOK_ADMIN_JWT_AUDIENCE');
  const claims = { ...(issuer !== undefined && { issuer }), ...(audience !== undefined && { audience }) };

  if (secret !== undefined && jwksUrl !== undefined) {
    problems.push('set only one of KEYHOOK_ADMIN_JWT_SECRET and KEYHOOK_ADMIN_JWKS_URL, not both');
    return null;
  }
  if (secret !== undefined) {
    const bytes = Buffer.byteLength(secret, 'utf8');
    if (bytes < MIN_SECRET_BYTES) {
      problems.push(
        `KEYHOOK_ADMIN_JWT_SECRET must be at least ${MIN_SECRET_BYTES} bytes long (it has ${bytes})`,
      );
      return null;
    }
    return { kind: 'secret', secret, generated: false, ...claims };
  }
  if (jwksUrl !== undefined) {
    const allowed = production ? ['https:'] : ['https:', 'http:'];
    const protocol = URL.canParse(jwksUrl) ? new URL(jwksUrl).protocol : null;
    if (protocol === null || !allowed.includes(protocol)) {
      problems.push(
        `KEYHOOK_ADMIN_JWKS_URL must be an ${production ? 'https://' : 'http(s)://'} URL, got "${jwksUrl}"`,
      );
      return null;
    }
    return { kind: 'jwks', jwksUrl, ...claims };
  }
  if (production) {
    problems.push(
      'NODE_ENV=production needs KEYHOOK_ADMIN_JWT_SECRET (HS256, at least 32 bytes) or KEYHOOK_ADMIN_JWKS_URL ' +
        'to verify admin JWTs; a generated secret is for development only',
    );
    return null;
  }
  return { kind: 'secret', secret: generateSecret(), generated: true, ...claims };
}

function parseEncryptionKey(text: string | undefined, name: string, problems: string[]): Buffer | null {
  if (text === undefined) return null;
  const key =
    BASE64.test(text) || BASE64URL.test(text)
      ? Buffer.from(text, BASE64.test(text) ? 'base64' : 'base64url')
      : null;
  if (key === null || key.length !== 32) {
    problems.push(`${name} must hold 32-byte keys, base64 encoded (e.g. \`openssl rand -base64 32\`)`);
    return null;
  }
  return key;
}

function parseRetrySchedule(text: string | undefined, problems: string[]): number[] {
  if (text === undefined) return [...SPEC_RETRY_SCHEDULE_MS];
  const steps = text.split(',').map(parseDuration);
  if (steps.some((step) => step === null)) {
    problems.push(
      `KEYHOOK_RETRY_SCHEDULE must be a comma-separated list of positive durations like 1m,5m,15m,1h,3h,6h, got "${text}"`,
    );
    return [];
  }
  if (steps.length > MAX_RETRIES) {
    problems.push(`KEYHOOK_RETRY_SCHEDULE may list at most ${MAX_RETRIES} retries, got ${steps.length}`);
    return [];
  }
  return steps as number[];
}

function defaultSecret(): string {
  return randomBytes(32).toString('base64url');
}
