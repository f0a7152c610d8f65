import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { PORTAL_PERMISSIONS } from '@keyhook/core';
import { requestJson } from '@keyhook/testing/support';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from './client.js';
import { tempDir } from './instances.js';
import { MAIN, ServerProcess } from './server-process.js';

describe('the process: node dist/main.js', () => {
  const running: ServerProcess[] = [];
  const temps: ReturnType<typeof tempDir>[] = [];
  afterEach(() => {
    for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    for (const t of temps.splice(0)) t.remove();
  });

  const launch = (env: Record<string, string>) => {
    const p = new ServerProcess(env);
    running.push(p);
    return p;
  };

  it('development: creates the SQLite directory, prints a dev admin token, a curl line and a portal link that work', async () => {
    expect(existsSync(MAIN), 'dist/main.js is built by the global setup').toBe(true);
    const temp = tempDir();
    temps.push(temp);
    const sqlitePath = path.join(temp.dir, 'nested', 'dir', 'keyhook.db');
    const server = launch({ KEYHOOK_SQLITE_PATH: sqlitePath });

    const [, baseUrl] = await server.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, 'listening');
    const [, token] = await server.waitFor(/KEYHOOK_ADMIN_TOKEN=(\S+)/, 'the dev token');
    const [curl] = await server.waitFor(/curl -sS -X POST \S+\/api\/v1\/admin\/keys .*$/m, 'the curl line');
    expect(curl).toContain(`${baseUrl}/api/v1/admin/keys`);
    expect(curl).toContain(`Bearer ${token}`);
    expect(existsSync(sqlitePath)).toBe(true);

    // The printed token is for tenant demo, sub demo-admin, valid 12 h.
    const claims = JSON.parse(Buffer.from(token!.split('.')[1]!, 'base64url').toString());
    expect(claims).toMatchObject({ tenant_id: 'demo', sub: 'demo-admin' });
    expect(claims.exp - claims.iat).toBe(12 * 60 * 60);

    // Run what the curl line sends: its -d body, with the printed token.
    const body = JSON.parse(curl.match(/-d '([^']+)'/)![1]!);
    const client = await Client.forServer(baseUrl!);
    const created = await client.request('POST', '/api/v1/admin/keys', token, body);
    expect(created.status).toBe(201);
    const secret = created.body.secret;
    const source = await client.request('POST', '/api/v1/sources', secret, { name: 'docs' });
    expect(source.status).toBe(201);
    expect((await client.listSources(secret)).body.data.map((s: { id: string }) => s.id)).toEqual([
      source.body.source.id,
    ]);
    expect((await client.request('GET', '/healthz')).status).toBe(200);

    // The printed portal link: tenant demo, every permission, an hour (less than the token's 12 h).
    const [, link] = await server.waitFor(/^ {2}(http:\S+#token=kpl_\S+)$/m, 'the portal link');
    expect(link!.startsWith(`${baseUrl}/api/v1/portal#token=kpl_`), link).toBe(true);
    const portal = `${baseUrl}/api/v1/portal`;
    const linkToken = new URLSearchParams(new URL(link!).hash.slice(1)).get('token');
    const exchange = () =>
      requestJson('POST', `${portal}/api/exchange`, {
        json: { token: linkToken },
        headers: { origin: baseUrl! },
      });
    const opened = await exchange();
    expect(opened.status, opened.text).toBe(200);
    expect(opened.body.session).toMatchObject({
      tenantId: 'demo',
      permissions: [...PORTAL_PERMISSIONS].sort(),
    });
    expect(Math.abs(Date.parse(opened.body.session.expiresAt) / 1000 - (claims.iat + 3600))).toBeLessThan(10);
    const cookie = opened.headers.get('set-cookie')!;
    expect(cookie).toMatch(
      /^keyhook_portal=kps_[\w-]+; Path=\/api\/v1\/portal; Max-Age=\d+; HttpOnly; SameSite=Strict$/,
    );
    const session = await requestJson('GET', `${portal}/api/session`, {
      headers: { cookie: cookie.split(';')[0]! },
    });
    expect(session.status).toBe(200);
    expect(session.body.session.tenantId).toBe('demo');
    // It works once.
    const again = await exchange();
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe('invalid_portal_link');
    // The page it opens, under its strict CSP, never framed.
    const page = await fetch(`${portal}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toMatch(
      /^default-src 'none'; script-src 'self';.*frame-ancestors 'none'$/,
    );
    expect(await page.text()).toContain('<title>keyhook reference server</title>');

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('SIGTERM drains: a request in flight completes, then the process exits 0', async () => {
    const temp = tempDir();
    temps.push(temp);
    const server = launch({ KEYHOOK_SQLITE_PATH: path.join(temp.dir, 'keyhook.db') });
    const [, baseUrl] = await server.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, 'listening');
    const [, token] = await server.waitFor(/KEYHOOK_ADMIN_TOKEN=(\S+)/, 'the dev token');

    // A create whose body arrives in two parts: the request is in flight while SIGTERM lands.
    const body = Buffer.from(JSON.stringify({ name: 'in flight', scopes: ['items:read'] }));
    const agent = new http.Agent({ keepAlive: true });
    const request = http.request(`${baseUrl}/api/v1/admin/keys`, {
      method: 'POST',
      agent,
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        'content-length': String(body.length),
      },
    });
    const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
      request.on('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      request.on('error', reject);
    });
    request.write(body.subarray(0, 10));
    await server.waitFor(
      /^(?=.*incoming request)(?=.*"url":"\/api\/v1\/admin\/keys").*$/m,
      'the request to arrive',
    );

    server.child.kill('SIGTERM');
    await server.waitFor(/SIGTERM received: draining/, 'the drain to start');
    expect(server.child.exitCode).toBeNull(); // still waiting for the request in flight
    request.end(body.subarray(10));

    const answered = await response;
    expect(answered.status).toBe(201);
    expect(JSON.parse(answered.body).key.name).toBe('in flight');
    expect(await server.exited).toBe(0);
    expect(server.stdout).toMatch(/drained: exiting/);
    agent.destroy();
  });

  it('production without an admin secret refuses to start, with a clear message and no token', async () => {
    const temp = tempDir();
    temps.push(temp);
    const server = launch({ NODE_ENV: 'production', KEYHOOK_SQLITE_PATH: path.join(temp.dir, 'k.db') });
    expect(await server.exited).toBe(1);
    expect(server.stderr).toMatch(/NODE_ENV=production needs KEYHOOK_ADMIN_JWT_SECRET/);
    expect(server.stdout).not.toMatch(/KEYHOOK_ADMIN_TOKEN/);
  });

  it('an operator-set secret is never printed, and no token or portal link is made from it', async () => {
    const temp = tempDir();
    temps.push(temp);
    const secret = 'operator-secret-0123456789abcdef-0123456789';
    const server = launch({
      KEYHOOK_ADMIN_JWT_SECRET: secret,
      KEYHOOK_SQLITE_PATH: path.join(temp.dir, 'k.db'),
    });
    await server.waitFor(/listening on/, 'listening');
    server.child.kill('SIGINT');
    expect(await server.exited).toBe(0);
    expect(server.stdout + server.stderr).not.toContain(secret);
    expect(server.stdout).not.toMatch(/KEYHOOK_ADMIN_TOKEN|Bearer ey|#token=|kpl_/);
  });
});
