import { adminToken, requestJson } from '@keyhook/testing/support';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { REDACTED, redactLine, redactUrl, withLogRedaction } from '../src/log-redaction.js';
import { buildServer, type ReferenceServer } from '../src/server.js';
import { listen } from './client.js';
import { sqliteEnv, tempDir } from './instances.js';

/** Every line the server's logger writes, as written. */
function captured() {
  const lines: string[] = [];
  return { lines, stream: { write: (line: string) => void lines.push(line) }, text: () => lines.join('') };
}

describe('no credential in any log line', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const start = async () => {
    const temp = tempDir();
    cleanups.push(temp.remove);
    const log = captured();
    const server: ReferenceServer = await buildServer(loadConfig(sqliteEnv(temp.dir)), {
      logger: { level: 'info', stream: log.stream },
      worker: false,
    });
    cleanups.push(() => server.close());
    return { server, baseUrl: await listen(server.app), log };
  };

  it('redacts ?access_token=, the authorization header, API keys and bare query tokens, on every route', async () => {
    const { server, baseUrl, log } = await start();
    const refusedJwt = await adminToken({ subject: 'sent-in-the-query' });
    const validJwt = await adminToken({ subject: 'sent-in-the-header' });
    const opaque = 'opaque-admin-secret-Zq81';
    const bare = 'bare-query-token-Xy72';
    const created = await requestJson('POST', `${baseUrl}/api/v1/admin/keys`, {
      token: validJwt,
      json: { name: 'k', scopes: ['sources:read'] },
    });
    expect(created.status).toBe(201);
    const apiKey: string = created.body.secret;

    const get = (path: string, headers: Record<string, string> = {}) =>
      requestJson('GET', `${baseUrl}${path}`, { headers });
    // A JWT as ?access_token=: refused, and once logged in the request URL.
    expect((await get(`/api/v1/admin/keys?access_token=${refusedJwt}`)).status).toBe(401);
    // The same beside a valid authorization header.
    expect(
      (
        await get(`/api/v1/admin/keys?foo=1&access_token=${refusedJwt}`, {
          authorization: `Bearer ${validJwt}`,
        })
      ).status,
    ).toBe(200);
    // A refused opaque bearer token (core logs why it refused).
    expect((await get('/api/v1/admin/keys', { authorization: `Bearer ${opaque}` })).status).toBe(401);
    // An API key in the header and in the query of a data-plane route.
    expect(
      (await get(`/api/v1/sources?api_key=${apiKey}`, { authorization: `Bearer ${apiKey}` })).status,
    ).toBe(200);
    // Unknown routes, a bare query token, the health check.
    expect((await get(`/nope?token=${refusedJwt}`)).status).toBe(404);
    expect((await get(`/healthz?${bare}`)).status).toBe(200);
    // Anything that logs a request's headers, however it nests them.
    server.app.log.info({ headers: { authorization: `Bearer ${opaque}`, 'x-api-key': apiKey } }, 'headers');
    server.app.log.info({ request: { headers: { authorization: `Basic ${opaque}` } } }, 'nested');
    // A message that happens to carry a URL or a token.
    server.app.log.warn(`calling /x?access_token=${refusedJwt} with Bearer ${opaque}`);

    const text = log.text();
    for (const line of log.lines) expect(() => JSON.parse(line), line).not.toThrow();
    // The log did record these requests, with the parameter names kept.
    expect(text).toContain(`/api/v1/admin/keys?access_token=${REDACTED}`);
    expect(text).toContain(`/api/v1/admin/keys?foo=${REDACTED}&access_token=${REDACTED}`);
    expect(text).toContain(`/api/v1/sources?api_key=${REDACTED}`);
    expect(text).toContain('admin session rejected');
    for (const secret of [refusedJwt, validJwt, opaque, bare, apiKey, apiKey.slice(-48)]) {
      expect(text).not.toContain(secret);
    }
    // No JWT payload segment either (it carries the subject).
    for (const jwt of [refusedJwt, validJwt]) expect(text).not.toContain(jwt.split('.')[1]!);
  });

  it('withLogRedaction keeps `false` silent and keeps an operator’s own redact paths and hooks', () => {
    expect(withLogRedaction(undefined)).toBe(false);
    expect(withLogRedaction(false)).toBe(false);
    const written: string[] = [];
    const merged = withLogRedaction({
      redact: ['password'],
      hooks: {
        streamWrite: (line) => {
          written.push(line);
          return line.replace('x', 'y');
        },
      },
    });
    if (typeof merged !== 'object' || merged === null) throw new Error('expected options');
    expect(merged.redact).toMatchObject({
      paths: expect.arrayContaining(['password', 'headers["authorization"]']),
    });
    expect(merged.hooks?.streamWrite?.('x ?a=b')).toBe(`y ?a=${REDACTED}`);
    expect(written).toEqual(['x ?a=b']);
  });
});

describe('redactUrl and redactLine', () => {
  it.each([
    ['/a', '/a'],
    ['/a?', '/a?'],
    ['/a?access_token=abc', `/a?access_token=${REDACTED}`],
    ['/a?x=1&y=&z', `/a?x=${REDACTED}&y=${REDACTED}&${REDACTED}`],
    ['/a?x=1#frag', `/a?x=${REDACTED}#${REDACTED}`],
    ['/a?x=a=b', `/a?x=${REDACTED}`],
  ])('redactUrl(%s)', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it('keeps a JSON line valid JSON, escaped quotes included', () => {
    const line = `${JSON.stringify({ msg: 'GET /a?t=se"cret&u=v', auth: 'Bearer ab"c' })}\n`;
    const out = redactLine(line);
    expect(() => JSON.parse(out)).not.toThrow();
    expect(out).not.toMatch(/t=se|u=v|Bearer ab/);
  });
});
