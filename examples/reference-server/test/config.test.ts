import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { parseDuration } from '../src/duration.js';

const SECRET = 'an-operator-secret-of-at-least-32-bytes!';
const KEY = Buffer.alloc(32, 9).toString('base64');
const cwd = '/srv/app';
const load = (env: Record<string, string>) => loadConfig(env, { cwd, generateSecret: () => 'generated' });

function problemsOf(env: Record<string, string>): string[] {
  try {
    load(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig (data-plane.md §7.1)', () => {
  it('defaults: 127.0.0.1:3000, SQLite at ./data/keyhook.db, development with a generated admin secret', () => {
    const config = load({});
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      production: false,
      store: { kind: 'sqlite', filename: path.resolve(cwd, 'data/keyhook.db') },
      admin: { kind: 'secret', secret: 'generated', generated: true },
      encryptionKey: null,
      previousEncryptionKeys: [],
      retryScheduleMs: [60_000, 300_000, 900_000, 3_600_000, 10_800_000, 21_600_000],
      deliveryTimeoutMs: null,
      retentionMs: null,
      metricsPort: null,
      otlp: { metrics: null, traces: null },
    });
  });

  it('the default generated secret is random and long enough for HS256', () => {
    const a = loadConfig({}).admin;
    const b = loadConfig({}).admin;
    if (a.kind !== 'secret' || b.kind !== 'secret') throw new Error('expected secrets');
    expect(Buffer.byteLength(a.secret)).toBeGreaterThanOrEqual(32);
    expect(a.secret).not.toBe(b.secret);
  });

  it('reads PORT, HOST and KEYHOOK_SQLITE_PATH; empty variables count as unset', () => {
    const config = load({ PORT: '0', HOST: '0.0.0.0', KEYHOOK_SQLITE_PATH: 'db/x.sqlite', DATABASE_URL: '' });
    expect(config).toMatchObject({
      port: 0,
      host: '0.0.0.0',
      store: { kind: 'sqlite', filename: '/srv/app/db/x.sqlite' },
    });
  });

  it('DATABASE_URL=postgres://… selects Postgres, in schema keyhook unless KEYHOOK_PG_SCHEMA says otherwise', () => {
    const url = 'postgres://app:pw@db:5432/app';
    expect(load({ DATABASE_URL: url }).store).toEqual({
      kind: 'postgres',
      connectionString: url,
      schema: 'keyhook',
      statementTimeoutMs: 5000,
      idleInTransactionTimeoutMs: 10_000,
      connectTimeoutMs: 5000,
    });
    expect(load({ DATABASE_URL: 'postgresql://db/app', KEYHOOK_PG_SCHEMA: 'tenant_x' }).store).toMatchObject({
      kind: 'postgres',
      connectionString: 'postgresql://db/app',
      schema: 'tenant_x',
    });
  });

  it('KEYHOOK_PG_STATEMENT_TIMEOUT and KEYHOOK_PG_IDLE_IN_TRANSACTION_TIMEOUT take a duration or off; KEYHOOK_PG_CONNECT_TIMEOUT a duration', () => {
    const url = 'postgres://db/app';
    expect(
      load({
        DATABASE_URL: url,
        KEYHOOK_PG_STATEMENT_TIMEOUT: '2s',
        KEYHOOK_PG_IDLE_IN_TRANSACTION_TIMEOUT: 'off',
      }).store,
    ).toMatchObject({ statementTimeoutMs: 2000, idleInTransactionTimeoutMs: 0 });
    expect(problemsOf({ DATABASE_URL: url, KEYHOOK_PG_STATEMENT_TIMEOUT: '5' })).toEqual([
      expect.stringContaining('KEYHOOK_PG_STATEMENT_TIMEOUT must be a duration'),
    ]);
    expect(load({ DATABASE_URL: url, KEYHOOK_PG_CONNECT_TIMEOUT: '1s' }).store).toMatchObject({
      connectTimeoutMs: 1000,
    });
    expect(problemsOf({ DATABASE_URL: url, KEYHOOK_PG_CONNECT_TIMEOUT: 'off' })).toEqual([
      expect.stringContaining('KEYHOOK_PG_CONNECT_TIMEOUT must be a duration like 5s or 500ms, got'),
    ]);
  });

  it('refuses a DATABASE_URL that is not Postgres, without echoing it (it may hold a password)', () => {
    const problems = problemsOf({ DATABASE_URL: 'mysql://root:hunter2@db/app' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/DATABASE_URL must be a postgres/);
    expect(problems.join()).not.toContain('hunter2');
  });

  it.each(['abc', '-1', '65536', '3000.5', '1e3', '99999999'])('refuses PORT=%s', (port) => {
    expect(problemsOf({ PORT: port })).toEqual([expect.stringContaining(`PORT must be an integer`)]);
  });

  it('production without a secret or JWKS, or without an encryption key, refuses to start and says what to set', () => {
    const problems = problemsOf({ NODE_ENV: 'production' });
    expect(problems).toEqual([
      expect.stringMatching(/KEYHOOK_ADMIN_JWT_SECRET.*KEYHOOK_ADMIN_JWKS_URL/),
      expect.stringMatching(/^KEYHOOK_ENCRYPTION_KEY is required when NODE_ENV=production/),
    ]);
  });

  it('production with a secret and an encryption key starts, and the secret is marked as the operator’s', () => {
    const config = load({
      NODE_ENV: 'production',
      KEYHOOK_ADMIN_JWT_SECRET: SECRET,
      KEYHOOK_ENCRYPTION_KEY: KEY,
    });
    expect(config.production).toBe(true);
    expect(config.admin).toEqual({ kind: 'secret', secret: SECRET, generated: false });
  });

  it('reads earlier master keys from KEYHOOK_PREVIOUS_ENCRYPTION_KEYS, and refuses a bad one', () => {
    const old = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
    const config = load({
      KEYHOOK_PREVIOUS_ENCRYPTION_KEYS: old.map((k) => k.toString('base64')).join(', '),
    });
    expect(config.previousEncryptionKeys.map((k) => k.toString('hex'))).toEqual(
      old.map((k) => k.toString('hex')),
    );
    expect(problemsOf({ KEYHOOK_PREVIOUS_ENCRYPTION_KEYS: `${KEY},short` })).toEqual([
      expect.stringContaining('KEYHOOK_PREVIOUS_ENCRYPTION_KEYS must hold 32-byte keys'),
    ]);
  });

  it('a short secret is refused without being repeated', () => {
    const problems = problemsOf({ KEYHOOK_ADMIN_JWT_SECRET: 'short-secret' });
    expect(problems).toEqual([expect.stringContaining('at least 32 bytes long (it has 12)')]);
    expect(problems.join()).not.toContain('short-secret');
  });

  it('takes a JWKS URL with issuer and audience; production wants https', () => {
    expect(
      load({
        KEYHOOK_ADMIN_JWKS_URL: 'https://portal.example/.well-known/jwks.json',
        KEYHOOK_ADMIN_JWT_ISSUER: 'https://portal.example',
        KEYHOOK_ADMIN_JWT_AUDIENCE: 'keyhook',
      }).admin,
    ).toEqual({
      kind: 'jwks',
      jwksUrl: 'https://portal.example/.well-known/jwks.json',
      issuer: 'https://portal.example',
      audience: 'keyhook',
    });
    expect(load({ KEYHOOK_ADMIN_JWKS_URL: 'http://localhost:4000/jwks' }).admin.kind).toBe('jwks');
    expect(
      problemsOf({
        NODE_ENV: 'production',
        KEYHOOK_ADMIN_JWKS_URL: 'http://portal.internal/jwks',
        KEYHOOK_ENCRYPTION_KEY: KEY,
      }),
    ).toEqual([expect.stringContaining('must be an https:// URL')]);
    expect(problemsOf({ KEYHOOK_ADMIN_JWKS_URL: 'not a url' })).toHaveLength(1);
  });

  it('the generated development secret keeps the configured issuer and audience', () => {
    expect(load({ KEYHOOK_ADMIN_JWT_ISSUER: 'iss', KEYHOOK_ADMIN_JWT_AUDIENCE: 'aud' }).admin).toEqual({
      kind: 'secret',
      secret: 'generated',
      generated: true,
      issuer: 'iss',
      audience: 'aud',
    });
  });

  it('refuses a secret and a JWKS URL together', () => {
    expect(
      problemsOf({ KEYHOOK_ADMIN_JWT_SECRET: SECRET, KEYHOOK_ADMIN_JWKS_URL: 'https://p.example/jwks' }),
    ).toEqual([expect.stringContaining('only one of')]);
  });

  it('validates the webhook settings that later issues use', () => {
    const key = Buffer.alloc(32, 7);
    const config = load({
      KEYHOOK_ENCRYPTION_KEY: key.toString('base64'),
      KEYHOOK_RETRY_SCHEDULE: '1m, 5m,15m,1h,3h,6h',
      KEYHOOK_DELIVERY_TIMEOUT: '10s',
    });
    expect(config.encryptionKey?.equals(key)).toBe(true);
    expect(config.retryScheduleMs).toEqual([60_000, 300_000, 900_000, 3_600_000, 10_800_000, 21_600_000]);
    expect(config.deliveryTimeoutMs).toBe(10_000);
    expect(load({ KEYHOOK_ENCRYPTION_KEY: key.toString('base64url') }).encryptionKey?.equals(key)).toBe(true);
    expect(load({ KEYHOOK_RETRY_SCHEDULE: '200ms,200ms' }).retryScheduleMs).toEqual([200, 200]);
    expect(load({ KEYHOOK_RETRY_SCHEDULE: Array(12).fill('2h').join(',') }).retryScheduleMs).toHaveLength(12);
    expect(problemsOf({ KEYHOOK_RETRY_SCHEDULE: Array(13).fill('1s').join(',') })).toEqual([
      'KEYHOOK_RETRY_SCHEDULE may list at most 12 retries, got 13',
    ]);
  });

  it('KEYHOOK_RETENTION: a duration of at least a second, days included', () => {
    expect(load({ KEYHOOK_RETENTION: '30d' }).retentionMs).toBe(30 * 86_400_000);
    expect(load({ KEYHOOK_RETENTION: '5s' }).retentionMs).toBe(5000);
    for (const bad of ['500ms', '0d', '30 days', '-1h'])
      expect(problemsOf({ KEYHOOK_RETENTION: bad })).toEqual([
        `KEYHOOK_RETENTION must be a duration of at least 1s, like 30d or 12h, got "${bad}"`,
      ]);
  });

  it('KEYHOOK_LIST_BYTE_BUDGET: bytes, KiB or MiB, at least 16 KiB; unset leaves keyhook its 1 MiB', () => {
    expect(load({}).listByteBudget).toBeNull();
    expect(load({ KEYHOOK_LIST_BYTE_BUDGET: '4MiB' }).listByteBudget).toBe(4 * 1024 * 1024);
    expect(load({ KEYHOOK_LIST_BYTE_BUDGET: '512KiB' }).listByteBudget).toBe(512 * 1024);
    expect(load({ KEYHOOK_LIST_BYTE_BUDGET: '16384' }).listByteBudget).toBe(16_384);
    for (const bad of ['16383', '15KiB', '0', '1 MiB', '1MB', '-1', '2.5MiB'])
      expect(problemsOf({ KEYHOOK_LIST_BYTE_BUDGET: bad })).toEqual([
        `KEYHOOK_LIST_BYTE_BUDGET must be bytes, at least 16384 (16KiB), like 1048576, 512KiB or 4MiB, got "${bad}"`,
      ]);
  });

  it('rate limits: KEYHOOK_RATE_LIMIT off unless set, KEYHOOK_FAILED_AUTH_LIMIT 100/1m unless off; bad values named', () => {
    expect(load({})).toMatchObject({
      keyRateLimit: null,
      failedAuthLimit: { limit: 100, window: 60 },
      trustProxy: false,
    });
    expect(
      load({ KEYHOOK_RATE_LIMIT: '1000/1m', KEYHOOK_FAILED_AUTH_LIMIT: 'OFF', KEYHOOK_TRUST_PROXY: '2' }),
    ).toMatchObject({ keyRateLimit: { limit: 1000, window: 60 }, failedAuthLimit: null, trustProxy: 2 });
    expect(load({ KEYHOOK_RATE_LIMIT: '5/24h', KEYHOOK_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' })).toMatchObject(
      {
        keyRateLimit: { limit: 5, window: 86_400 },
        trustProxy: '10.0.0.0/8, 127.0.0.1',
      },
    );
    expect(load({ KEYHOOK_TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    for (const bad of ['0/1m', '10', '10/0s', '10/500ms', '10/25h', 'ten/1m', '10/1m/2']) {
      expect(problemsOf({ KEYHOOK_RATE_LIMIT: bad }), bad).toEqual([
        expect.stringMatching(/^KEYHOOK_RATE_LIMIT must be <requests>\/<window>/),
      ]);
      expect(problemsOf({ KEYHOOK_FAILED_AUTH_LIMIT: bad }), bad).toEqual([
        expect.stringMatching(/^KEYHOOK_FAILED_AUTH_LIMIT must be/),
      ]);
    }
  });

  it('collects every problem at once', () => {
    const problems = problemsOf({
      PORT: 'x',
      KEYHOOK_PG_SCHEMA: 'Bad-Name',
      KEYHOOK_ENCRYPTION_KEY: Buffer.alloc(16).toString('base64'),
      KEYHOOK_RETRY_SCHEDULE: '1m,,5m',
      KEYHOOK_DELIVERY_TIMEOUT: '0s',
      NODE_ENV: 'production',
    });
    expect(problems.map((p) => p.split(' ')[0])).toEqual([
      'PORT',
      'KEYHOOK_PG_SCHEMA',
      'NODE_ENV=production',
      'KEYHOOK_ENCRYPTION_KEY',
      'KEYHOOK_RETRY_SCHEDULE',
      'KEYHOOK_DELIVERY_TIMEOUT',
    ]);
    expect(() => load({ PORT: 'x' })).toThrow(/Invalid configuration:\n {2}- PORT/);
  });
});

/** README "OpenTelemetry": what goes out over OTLP, from the standard variables. */
describe('loadConfig: OTLP', () => {
  const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
  const DEFAULT_METRICS = { protocol: 'http/protobuf', exportIntervalMs: 60_000, exportTimeoutMs: 30_000 };

  it('off without an endpoint, and then no other OTEL_ variable is read', () => {
    expect(load({}).otlp).toEqual({ metrics: null, traces: null });
    expect(
      load({
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_METRICS_EXPORTER: 'console',
        OTEL_SDK_DISABLED: 'maybe',
        OTEL_METRIC_EXPORT_INTERVAL: 'soon',
        OTEL_EXPORTER_OTLP_ENDPOINT: '',
      }).otlp,
    ).toEqual({ metrics: null, traces: null });
  });

  it('the generic endpoint sends both signals, a signal’s own endpoint that signal only; http/protobuf by default', () => {
    expect(load(ENDPOINT).otlp).toEqual({ metrics: DEFAULT_METRICS, traces: { protocol: 'http/protobuf' } });
    expect(load({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://c:4318/v1/metrics' }).otlp).toEqual({
      metrics: DEFAULT_METRICS,
      traces: null,
    });
    expect(load({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' }).otlp).toEqual({
      metrics: null,
      traces: { protocol: 'http/protobuf' },
    });
  });

  it('OTEL_SDK_DISABLED=true turns both off, OTEL_<SIGNAL>S_EXPORTER=none one; otlp is the default', () => {
    for (const disabled of ['true', 'TRUE', 'True']) {
      expect(
        load({ ...ENDPOINT, OTEL_SDK_DISABLED: disabled, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).otlp,
      ).toEqual({ metrics: null, traces: null });
    }
    expect(load({ ...ENDPOINT, OTEL_SDK_DISABLED: 'false' }).otlp.traces).not.toBeNull();
    expect(load({ ...ENDPOINT, OTEL_METRICS_EXPORTER: 'none' }).otlp).toEqual({
      metrics: null,
      traces: { protocol: 'http/protobuf' },
    });
    expect(load({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'None', OTEL_METRICS_EXPORTER: 'otlp' }).otlp).toEqual({
      metrics: DEFAULT_METRICS,
      traces: null,
    });
  });

  it('the protocol: a signal’s own variable over the generic one; http/json picks the JSON exporters', () => {
    expect(load({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }).otlp).toMatchObject({
      metrics: { protocol: 'http/json' },
      traces: { protocol: 'http/json' },
    });
    expect(
      load({
        ...ENDPOINT,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
      }).otlp,
    ).toMatchObject({ metrics: { protocol: 'http/json' }, traces: { protocol: 'http/protobuf' } });
  });

  it('grpc, or any other protocol, is refused naming the variable that says it, once', () => {
    expect(problemsOf({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toEqual([
      'OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (this server does not export over gRPC), got "grpc"',
    ]);
    expect(
      problemsOf({
        ...ENDPOINT,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http',
      }),
    ).toEqual([expect.stringMatching(/^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be .*, got "http"$/)]);
    // A signal that is off is not read.
    expect(
      load({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/v1/traces',
        OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'grpc',
      }).otlp.traces,
    ).toEqual({ protocol: 'http/protobuf' });
  });

  it('OTEL_METRIC_EXPORT_INTERVAL and _TIMEOUT: whole milliseconds, the timeout never over the interval', () => {
    expect(load({ ...ENDPOINT, OTEL_METRIC_EXPORT_INTERVAL: '200' }).otlp.metrics).toMatchObject({
      exportIntervalMs: 200,
      exportTimeoutMs: 200,
    });
    expect(
      load({ ...ENDPOINT, OTEL_METRIC_EXPORT_INTERVAL: '5000', OTEL_METRIC_EXPORT_TIMEOUT: '1000' }).otlp
        .metrics,
    ).toMatchObject({ exportIntervalMs: 5000, exportTimeoutMs: 1000 });
    for (const bad of ['0', '1.5', '10s', '-1', '2147483648']) {
      expect(problemsOf({ ...ENDPOINT, OTEL_METRIC_EXPORT_INTERVAL: bad }), bad).toEqual([
        `OTEL_METRIC_EXPORT_INTERVAL must be a whole number of milliseconds from 1 to 2147483647, got "${bad}"`,
      ]);
      expect(problemsOf({ ...ENDPOINT, OTEL_METRIC_EXPORT_TIMEOUT: bad }), bad).toEqual([
        expect.stringMatching(/^OTEL_METRIC_EXPORT_TIMEOUT must be a whole number of milliseconds/),
      ]);
    }
  });

  it('refuses what it cannot honour: OTEL_SDK_DISABLED other than true or false, exporters other than otlp or none', () => {
    expect(problemsOf({ ...ENDPOINT, OTEL_SDK_DISABLED: '1' })).toEqual([
      'OTEL_SDK_DISABLED must be true or false, got "1"',
    ]);
    expect(problemsOf({ ...ENDPOINT, OTEL_METRICS_EXPORTER: 'prometheus' })).toEqual([
      'OTEL_METRICS_EXPORTER must be otlp or none: this server exports over OTLP only (KEYHOOK_METRICS_PORT serves Prometheus text); got "prometheus"',
    ]);
    expect(problemsOf({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp,console' })).toEqual([
      expect.stringMatching(/^OTEL_TRACES_EXPORTER must be otlp or none/),
    ]);
    expect(load({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp, otlp' }).otlp.traces).not.toBeNull();
  });
});

describe('parseDuration', () => {
  it.each([
    ['200ms', 200],
    ['10s', 10_000],
    ['5m', 300_000],
    ['3h', 10_800_000],
    ['30d', 2_592_000_000],
  ])('%s → %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '0s', '10', '1w', '-5s', '1.5s', 's'])('refuses %j', (text) =>
    expect(parseDuration(text)).toBeNull(),
  );
});
