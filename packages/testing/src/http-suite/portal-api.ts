import type { CreatePortalSessionInput } from '@keyhook/core';
import { describe, expect, it } from 'vitest';
import { type JsonReply, type JsonRequestOptions, requestJson } from '../support/http.js';
import { documentedRouteKeys } from '../support/openapi-contract.js';
import { admin, call, createKey, UNKNOWN_KEY_ID } from './client.js';
import type { SuiteContext } from './suite-context.js';

const ALL = ['keys:read', 'keys:write', 'webhooks:read', 'webhooks:write'] as const;

/** A browser's session in the portal: its cookie (or framed token), its CSRF token and its origin. */
interface Browser {
  cookie: string;
  csrfToken: string;
  origin: string;
  setCookie: string;
  link: string;
  sessionId: string;
}

const portalPath = (ctx: SuiteContext) => `${ctx.prefix}/portal`;

/** One request to the portal's JSON API, as its page sends it. */
function portal(
  ctx: SuiteContext,
  method: string,
  path: string,
  browser: Partial<Browser> & { bearer?: string },
  options: JsonRequestOptions = {},
): Promise<JsonReply> {
  const headers: Record<string, string> = { ...options.headers };
  if (browser.cookie) headers['cookie'] = browser.cookie;
  if (browser.bearer) headers['authorization'] = `Bearer ${browser.bearer}`;
  if (browser.csrfToken) headers['x-csrf-token'] = browser.csrfToken;
  if (browser.origin) headers['origin'] = browser.origin;
  return requestJson(method, `${ctx.baseUrl}${portalPath(ctx)}/api${path}`, {
    contract: ctx.contract,
    ...options,
    headers,
  });
}

/** Mints a link for `input` and exchanges it as a page of the portal would. */
async function signIn(ctx: SuiteContext, input: Partial<CreatePortalSessionInput> = {}): Promise<Browser> {
  const link = await ctx.keyhook.portal.createSession({ tenantId: 'tenant_a', permissions: ALL, ...input });
  const origin = ctx.baseUrl;
  const reply = await portal(ctx, 'POST', '/exchange', { origin }, { json: { token: link.token } });
  expect(reply.status, reply.text).toBe(200);
  const setCookie = reply.headers.get('set-cookie') ?? '';
  const body = reply.body as { csrfToken: string };
  return {
    cookie: setCookie.split(';')[0]!,
    csrfToken: body.csrfToken,
    origin,
    setCookie,
    link: link.token,
    sessionId: link.id,
  };
}

/** The portal's JSON API, mounted by the adapter's `portal` option (docs/decisions.md §22). */
export function portalApiCases(ctx: SuiteContext): void {
  describe('the portal API', () => {
    it('mints a link whose URL carries its token in the fragment', async () => {
      const link = await ctx.keyhook.portal.createSession({
        tenantId: 'tenant_a',
        permissions: ['keys:read'],
      });
      expect(link.url).toBe(`/api/v1/portal#token=${link.token}`);
      expect(link.token).toMatch(/^kpl_[A-Za-z0-9_-]{43}$/);
      expect(link.expiresAt.getTime() - ctx.clock.now().getTime()).toBe(3_600_000);
    });

    it('exchanges a link once, setting an HttpOnly, Strict, Secure cookie scoped to the portal', async () => {
      const browser = await signIn(ctx);
      const attributes = browser.setCookie.split('; ');
      expect(attributes[0]).toMatch(/^keyhook_portal=kps_[A-Za-z0-9_-]{43}$/);
      expect(attributes.slice(1).sort()).toEqual(
        ['HttpOnly', 'Max-Age=3600', `Path=${portalPath(ctx)}`, 'SameSite=Strict', 'Secure'].sort(),
      );
      const again = await portal(ctx, 'POST', '/exchange', browser, { json: { token: browser.link } });
      expect(again.status).toBe(401);
      expect(again.body).toMatchObject({
        error: { code: 'invalid_portal_link', details: [{ reason: 'used' }] },
      });
      expect(again.headers.get('set-cookie')).toBeNull();
    });

    it('refuses an expired link, and a session past its expiry', async () => {
      const link = await ctx.keyhook.portal.createSession({
        tenantId: 'tenant_a',
        permissions: ALL,
        expiresIn: 60,
      });
      const browser = await signIn(ctx, { expiresIn: 120 });
      ctx.clock.advance(61_000);
      const late = await portal(
        ctx,
        'POST',
        '/exchange',
        { origin: ctx.baseUrl },
        { json: { token: link.token } },
      );
      expect(late.status).toBe(401);
      expect(late.body).toMatchObject({
        error: { code: 'invalid_portal_link', message: 'This link has expired.' },
      });
      expect((await portal(ctx, 'GET', '/session', browser)).status).toBe(200);
      ctx.clock.advance(60_000);
      const ended = await portal(ctx, 'GET', '/session', browser);
      expect(ended.status).toBe(401);
      expect(ended.body).toMatchObject({ error: { code: 'invalid_portal_session' } });
      // Answers and refusals alike: no cache keeps them, no browser sniffs them as anything but JSON.
      for (const reply of [ended, await portal(ctx, 'GET', '/session', { cookie: browser.cookie })]) {
        expect(reply.headers.get('cache-control')).toBe('no-store');
        expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
      }
    });

    it('answers the session with its tenant, permissions, grantable scopes and the host catalog', async () => {
      const browser = await signIn(ctx, { permissions: ['keys:read', 'keys:write'], scopes: ['items:read'] });
      const reply = await portal(ctx, 'GET', '/session', browser);
      expect(reply.status).toBe(200);
      expect(reply.headers.get('cache-control')).toBe('no-store');
      expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
      expect(reply.body).toMatchObject({
        csrfToken: browser.csrfToken,
        session: {
          id: browser.sessionId,
          tenantId: 'tenant_a',
          permissions: ['keys:read', 'keys:write'],
          scopes: [{ name: 'items:read' }],
          headers: ctx.keyhook.headerNames,
          // Production: endpoint URLs are https:// on public addresses only.
          developmentUrls: false,
        },
      });
      const events = (reply.body as { session: { events: { type: string }[] } }).session.events;
      expect(events.map((event) => event.type)).toEqual(
        ctx.keyhook.eventCatalog().map((entry) => entry.type),
      );
    });

    it('answers as the OpenAPI document describes each of its routes, and an answer that leaves it fails', async () => {
      const documented = documentedRouteKeys(ctx.document as { paths: Record<string, object> });
      for (const { method, path } of ctx.keyhook.portal.api.routes) {
        expect(documented).toContain(`${method} ${portalPath(ctx)}${path.replace(/:(\w+)/g, '{$1}')}`);
      }
      // Each reply below is held to the document as it arrives; then altered, each is refused.
      const browser = await signIn(ctx);
      const url = (path: string) => `${ctx.baseUrl}${portalPath(ctx)}/api${path}`;
      const session = await portal(ctx, 'GET', '/session', browser);
      const answer = session.body as { session: Record<string, unknown>; csrfToken: string };
      const sessionProblems = (body: unknown) =>
        ctx.contract.problems('GET', url('/session'), { ...session, body });
      expect(sessionProblems(answer)).toEqual([]);
      expect(sessionProblems({ session: answer.session })).not.toEqual([]);
      expect(
        sessionProblems({ ...answer, session: { ...answer.session, permissions: ['keys:admin'] } }),
      ).not.toEqual([]);
      expect(sessionProblems({ ...answer, session: { ...answer.session, expiresAt: 'soon' } })).not.toEqual(
        [],
      );

      const link = await ctx.keyhook.portal.createSession({ tenantId: 'tenant_a', permissions: ALL });
      const framed = await portal(
        ctx,
        'POST',
        '/exchange',
        { origin: ctx.baseUrl },
        { json: { token: link.token, embedded: true } },
      );
      expect(framed.body).toMatchObject({ sessionToken: expect.stringMatching(/^kps_/) });
      const exchangeProblems = (body: unknown) =>
        ctx.contract.problems('POST', url('/exchange'), { ...framed, body });
      expect(exchangeProblems({ ...(framed.body as object), sessionToken: 7 })).not.toEqual([]);

      const stats = await portal(ctx, 'GET', '/webhooks/stats', browser);
      expect(stats.body).toEqual({ since: '2025-12-31T00:00:00.000Z', data: [] });
      const statsProblems = (body: unknown) =>
        ctx.contract.problems('GET', url('/webhooks/stats'), { ...stats, body });
      expect(
        statsProblems({ ...(stats.body as object), data: [{ webhookId: 'wh_1', succeeded: -1, failed: 0 }] }),
      ).not.toEqual([]);
    });

    it("creates a key under the session's tenant that the host's guarded route accepts", async () => {
      const browser = await signIn(ctx);
      const created = await portal(ctx, 'POST', '/keys', browser, {
        json: { name: 'from the portal', scopes: ['items:read'] },
      });
      expect(created.status, created.text).toBe(201);
      const { key, secret } = created.body as { key: { id: string }; secret: string };
      const guarded = await call(ctx, 'GET', '/host/items', { token: secret });
      expect(guarded.status).toBe(200);
      expect(guarded.body).toMatchObject({ apiKey: { tenantId: 'tenant_a', keyId: key.id } });
      // The secret is shown once: no later read has it.
      const read = await portal(ctx, 'GET', `/keys/${key.id}`, browser);
      expect(read.status).toBe(200);
      expect(read.text).not.toContain(secret.slice(-48));
    });

    it("refuses a key with a scope outside the session's scopes", async () => {
      const browser = await signIn(ctx, { scopes: ['items:read'] });
      const reply = await portal(ctx, 'POST', '/keys', browser, {
        json: { name: 'k', scopes: ['items:read', 'items:write'] },
      });
      expect(reply.status).toBe(403);
      expect(reply.body).toMatchObject({
        error: { code: 'forbidden', details: [{ path: 'scopes', scope: 'items:write' }] },
      });
      const list = await portal(ctx, 'GET', '/keys', browser);
      expect((list.body as { data: unknown[] }).data).toEqual([]);
    });

    it('answers a webhook with its deliveryRate; the old rateLimit of a create or PATCH still sets it', async () => {
      const browser = await signIn(ctx);
      const created = await portal(ctx, 'POST', '/webhooks', browser, {
        json: {
          url: 'https://hooks.example.com/portal-rate',
          events: ['run.completed'],
          rateLimit: { perSecond: 2 },
        },
      });
      expect(created.status, created.text).toBe(201);
      expect(created.body.webhook.deliveryRate).toEqual({ perSecond: 2 });
      expect(created.body.webhook).not.toHaveProperty('rateLimit');
      const path = `/webhooks/${created.body.webhook.id}`;
      const patched = await portal(ctx, 'PATCH', path, browser, { json: { rateLimit: { perSecond: 4 } } });
      expect(patched.body.webhook.deliveryRate).toEqual({ perSecond: 4 });
      const removed = await portal(ctx, 'PATCH', path, browser, { json: { deliveryRate: null } });
      expect(removed.body.webhook.deliveryRate).toBeNull();
      expect((await portal(ctx, 'GET', path, browser)).body.webhook).toEqual(removed.body.webhook);
      await portal(ctx, 'DELETE', path, browser);
    });

    it('refuses what the session has no permission for', async () => {
      const browser = await signIn(ctx, { permissions: ['keys:read'] });
      expect((await portal(ctx, 'GET', '/keys', browser)).status).toBe(200);
      const write = await portal(ctx, 'POST', '/keys', browser, {
        json: { name: 'k', scopes: ['items:read'] },
      });
      expect(write.status).toBe(403);
      expect(write.body).toMatchObject({
        error: { code: 'forbidden', details: [{ permission: 'keys:write' }] },
      });
      const webhooks = await portal(ctx, 'GET', '/webhooks', browser);
      expect(webhooks.status).toBe(403);
      expect((await portal(ctx, 'GET', '/webhooks/stats', browser)).status).toBe(403);
    });

    it('refuses a state-changing request from another origin, or without its CSRF token', async () => {
      const browser = await signIn(ctx);
      const body = { json: { name: 'k', scopes: ['items:read'] } };
      const cases: [string, Partial<Browser>, Record<string, string>][] = [
        ['another origin', { ...browser, origin: 'https://evil.example' }, {}],
        // The same host on another port is another origin: the check compares host and port.
        ['another port', { ...browser, origin: `http://${new URL(ctx.baseUrl).hostname}:1` }, {}],
        ['no origin', { ...browser, origin: '' }, {}],
        ['a cross-site fetch', browser, { 'sec-fetch-site': 'cross-site' }],
        ['no CSRF token', { ...browser, csrfToken: '' }, {}],
        ['a wrong CSRF token', { ...browser, csrfToken: 'a'.repeat(64) }, {}],
      ];
      for (const [name, as, headers] of cases) {
        const reply = await portal(ctx, 'POST', '/keys', as, { ...body, headers });
        expect(reply.status, name).toBe(403);
        expect(reply.body, name).toMatchObject({ error: { code: 'forbidden' } });
      }
      const link = await ctx.keyhook.portal.createSession({ tenantId: 'tenant_a', permissions: ALL });
      const forged = await portal(
        ctx,
        'POST',
        '/exchange',
        { origin: 'https://evil.example' },
        { json: { token: link.token } },
      );
      expect(forged.status).toBe(403);
      expect((await portal(ctx, 'GET', '/keys', browser)).body).toMatchObject({ data: [] });
    });

    it("gives nothing of another tenant's, and lists only its own", async () => {
      const theirs = await createKey(ctx, { name: 'tenant b key' }, 'tenant_b');
      const mine = await createKey(ctx, { name: 'tenant a key' }, 'tenant_a');
      const browser = await signIn(ctx);
      for (const [method, path] of [
        ['GET', `/keys/${theirs.key.id}`],
        ['DELETE', `/keys/${theirs.key.id}`],
        ['POST', `/keys/${theirs.key.id}/rotate`],
      ] as const) {
        const reply = await portal(ctx, method, path, browser);
        expect(reply.status, `${method} ${path}`).toBe(404);
      }
      const list = (await portal(ctx, 'GET', '/keys', browser)).body as { data: { id: string }[] };
      expect(list.data.map((key) => key.id)).toEqual([mine.key.id]);
      const still = await call(ctx, 'GET', `/admin/keys/${theirs.key.id}`, {
        token: await admin(ctx, 'tenant_b'),
      });
      expect(still.body).toMatchObject({ key: { status: 'active' } });
    });

    it('a framed page keeps its session token in memory: no cookie, a bearer token instead', async () => {
      const link = await ctx.keyhook.portal.createSession({ tenantId: 'tenant_a', permissions: ALL });
      const reply = await portal(
        ctx,
        'POST',
        '/exchange',
        { origin: ctx.baseUrl },
        {
          json: { token: link.token, embedded: true },
        },
      );
      expect(reply.status).toBe(200);
      expect(reply.headers.get('set-cookie')).toBeNull();
      const { sessionToken, csrfToken } = reply.body as { sessionToken: string; csrfToken: string };
      expect(sessionToken).toMatch(/^kps_/);
      const framed = { bearer: sessionToken, csrfToken, origin: ctx.baseUrl };
      const created = await portal(ctx, 'POST', '/keys', framed, {
        json: { name: 'k', scopes: ['items:read'] },
      });
      expect(created.status, created.text).toBe(201);
      // The scheme matches in any case (docs/http-api.md §5.1), as RFC 9110 has it.
      for (const scheme of ['bearer', 'BEARER']) {
        const read = await portal(
          ctx,
          'GET',
          '/session',
          {},
          { headers: { authorization: `${scheme} ${sessionToken}` } },
        );
        expect(read.status, `${scheme}: ${read.text}`).toBe(200);
      }
    });

    it("refuses a request that names another session than its cookie's: a tab of a session since replaced", async () => {
      const first = await signIn(ctx, { tenantId: 'tenant_a' });
      const second = await signIn(ctx, { tenantId: 'tenant_b' });
      // The browser's cookie is the second session's now; the first tab still names its own.
      const stale = await portal(ctx, 'GET', '/keys', second, {
        headers: { 'x-portal-session': first.sessionId },
      });
      expect(stale.status).toBe(401);
      expect(stale.body).toMatchObject({
        error: { code: 'invalid_portal_session', details: [{ reason: 'replaced' }] },
      });
      const own = await portal(ctx, 'GET', '/session', second, {
        headers: { 'x-portal-session': second.sessionId },
      });
      expect(own.body).toMatchObject({ session: { id: second.sessionId, tenantId: 'tenant_b' } });
    });

    it("switches the browser to a session held in memory; that session's sign-out leaves the cookie alone", async () => {
      const standing = await signIn(ctx, { tenantId: 'tenant_a' });
      const held = async (tenantId: string) => {
        const link = await ctx.keyhook.portal.createSession({ tenantId, permissions: ALL });
        const reply = await portal(ctx, 'POST', '/exchange', standing, {
          json: { token: link.token, embedded: true },
        });
        expect(reply.headers.get('set-cookie')).toBeNull();
        const body = reply.body as { sessionToken: string; csrfToken: string };
        return { bearer: body.sessionToken, csrfToken: body.csrfToken, origin: ctx.baseUrl };
      };
      // Stay: the held session ends, and the browser's cookie is not touched.
      const declined = await held('tenant_b');
      const out = await portal(ctx, 'POST', '/sign-out', { ...declined, cookie: standing.cookie });
      expect(out.status).toBe(204);
      expect(out.headers.get('set-cookie')).toBeNull();
      expect((await portal(ctx, 'GET', '/session', { bearer: declined.bearer })).status).toBe(401);
      expect((await portal(ctx, 'GET', '/session', standing)).body).toMatchObject({
        session: { tenantId: 'tenant_a' },
      });
      // Switch: the held session becomes the cookie, for what is left of its life.
      const chosen = await held('tenant_b');
      expect(
        (await portal(ctx, 'POST', '/switch', { bearer: chosen.bearer, origin: ctx.baseUrl })).status,
      ).toBe(403);
      const switched = await portal(ctx, 'POST', '/switch', chosen);
      expect(switched.status, switched.text).toBe(204);
      const attributes = (switched.headers.get('set-cookie') ?? '').split('; ');
      expect(attributes[0]).toBe(`keyhook_portal=${chosen.bearer}`);
      expect(attributes).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Max-Age=3600']));
      const now = await portal(ctx, 'GET', '/session', { cookie: attributes[0]! });
      expect(now.body).toMatchObject({ session: { tenantId: 'tenant_b' } });
    });

    it('ends a session by sign-out, and every session of a tenant when the host revokes them', async () => {
      const first = await signIn(ctx);
      const out = await portal(ctx, 'POST', '/sign-out', first);
      expect(out.status).toBe(204);
      expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
      expect((await portal(ctx, 'GET', '/session', first)).status).toBe(401);

      const second = await signIn(ctx);
      const third = await signIn(ctx);
      const other = await signIn(ctx, { tenantId: 'tenant_b' });
      expect(await ctx.keyhook.portal.revokeSessions('tenant_a')).toBe(2);
      expect((await portal(ctx, 'GET', '/session', second)).status).toBe(401);
      expect((await portal(ctx, 'GET', '/session', third)).status).toBe(401);
      expect((await portal(ctx, 'GET', '/session', other)).status).toBe(200);
      expect(await ctx.keyhook.portal.revokeSession('tenant_a', other.sessionId)).toBe(false);
      expect(await ctx.keyhook.portal.revokeSession('tenant_b', other.sessionId)).toBe(true);
      expect((await portal(ctx, 'GET', '/session', other)).status).toBe(401);
    });

    it("is not a way into the admin API: the session's cookie and token open no admin route", async () => {
      const browser = await signIn(ctx);
      const viaCookie = await call(ctx, 'GET', '/admin/keys', { headers: { cookie: browser.cookie } });
      expect(viaCookie.status).toBe(401);
      const token = browser.cookie.slice('keyhook_portal='.length);
      expect((await call(ctx, 'GET', '/admin/keys', { token })).status).toBe(401);
    });

    it('logs no link, session or key secret', async () => {
      const browser = await signIn(ctx);
      const created = await portal(ctx, 'POST', '/keys', browser, {
        json: { name: 'k', scopes: ['items:read'] },
      });
      await portal(ctx, 'POST', '/exchange', browser, { json: { token: browser.link } });
      const logged = ctx.logs.join('\n');
      const secrets = [
        browser.link,
        browser.cookie.split('=')[1]!,
        (created.body as { secret: string }).secret,
      ];
      for (const secret of secrets) expect(logged).not.toContain(secret);
    });

    it('refuses a malformed exchange with the envelope', async () => {
      const origin = ctx.baseUrl;
      const cases: [JsonRequestOptions, number, string][] = [
        [
          { body: new TextEncoder().encode('{'), headers: { 'content-type': 'application/json' } },
          400,
          'invalid_json',
        ],
        [{ json: { token: 42 } }, 400, 'validation_failed'],
        [{ json: { token: 'kpl_nope' } }, 401, 'invalid_portal_link'],
      ];
      for (const [options, status, code] of cases) {
        const reply = await portal(ctx, 'POST', '/exchange', { origin }, options);
        expect(reply.status).toBe(status);
        expect(reply.body).toMatchObject({ error: { code } });
        expect(reply.headers.get('x-request-id')).toMatch(/^req_/);
      }
    });

    it("refuses to rotate a key whose scopes are outside the session's: a new secret would grant them", async () => {
      const wide = await createKey(ctx, { name: 'host key', scopes: ['items:read', 'items:write'] });
      const browser = await signIn(ctx, { scopes: ['items:read'] });
      const reply = await portal(ctx, 'POST', `/keys/${wide.key.id}/rotate`, browser);
      expect(reply.status).toBe(403);
      expect(reply.body).toMatchObject({ error: { code: 'forbidden', details: [{ scope: 'items:write' }] } });
      expect((await call(ctx, 'GET', '/host/items', { token: wide.secret })).status).toBe(200);
      const narrow = await createKey(ctx, { name: 'narrow', scopes: ['items:read'] });
      expect((await portal(ctx, 'POST', `/keys/${narrow.key.id}/rotate`, browser)).status).toBe(200);
    });

    it("refuses a key rate limit above the host's default for the tenant, on create and on change", async () => {
      const served = await ctx.serve({ rateLimit: { default: { limit: 10, window: 1 } } });
      const browser = await signIn(served);
      const create = (rateLimit: { limit: number; window: number }) =>
        portal(served, 'POST', '/keys', browser, { json: { name: 'k', scopes: ['items:read'], rateLimit } });
      const above = await create({ limit: 11, window: 1 });
      expect(above.status).toBe(403);
      expect(above.body).toMatchObject({ error: { code: 'forbidden', details: [{ path: 'rateLimit' }] } });
      const slower = await create({ limit: 60, window: 60 });
      expect(slower.status, slower.text).toBe(201);
      const { key } = slower.body as { key: { id: string } };
      const raise = await portal(served, 'PATCH', `/keys/${key.id}`, browser, {
        json: { rateLimit: { limit: 1000, window: 10 } },
      });
      expect(raise.status).toBe(403);
      const lower = await portal(served, 'PATCH', `/keys/${key.id}`, browser, {
        json: { rateLimit: { limit: 5, window: 1 } },
      });
      expect(lower.status, lower.text).toBe(200);
      // The host's admin API is not capped: the plan is the host's to change.
      const byHost = await call(served, 'PATCH', `/admin/keys/${key.id}`, {
        token: await admin(served),
        json: { rateLimit: { limit: 1000, window: 1 } },
      });
      expect(byHost.status).toBe(200);
    });

    it("changes and revokes only keys within the session's scopes; it still reads the others", async () => {
      const wide = await createKey(ctx, { name: 'host key', scopes: ['items:read', 'items:write'] });
      const browser = await signIn(ctx, { scopes: ['items:read'] });
      const refused = [
        await portal(ctx, 'PATCH', `/keys/${wide.key.id}`, browser, { json: { name: 'mine now' } }),
        await portal(ctx, 'PATCH', `/keys/${wide.key.id}`, browser, {
          json: { rateLimit: { limit: 1, window: 1 } },
        }),
        await portal(ctx, 'DELETE', `/keys/${wide.key.id}`, browser),
      ];
      for (const reply of refused) {
        expect(reply.status, reply.text).toBe(403);
        expect(reply.body).toMatchObject({
          error: { code: 'forbidden', details: [{ path: 'scopes', scope: 'items:write' }] },
        });
      }
      const read = await portal(ctx, 'GET', `/keys/${wide.key.id}`, browser);
      expect(read.body).toMatchObject({
        key: { name: 'host key', status: 'active', rateLimit: null },
      });
      expect((await call(ctx, 'GET', '/host/items', { token: wide.secret })).status).toBe(200);
      const narrow = await createKey(ctx, { name: 'narrow', scopes: ['items:read'] });
      const renamed = await portal(ctx, 'PATCH', `/keys/${narrow.key.id}`, browser, { json: { name: 'ok' } });
      expect(renamed.status, renamed.text).toBe(200);
      const revoked = await portal(ctx, 'DELETE', `/keys/${narrow.key.id}`, browser);
      expect(revoked.body).toMatchObject({ key: { status: 'revoked' } });
      // An unknown key is not found, whatever the session's scopes.
      const unknown = await portal(ctx, 'DELETE', `/keys/${UNKNOWN_KEY_ID}`, browser);
      expect(unknown.status).toBe(404);
    });

    it('lowers a rate limit the host set, never raises or removes it, with or without a default', async () => {
      for (const served of [ctx, await ctx.serve({ rateLimit: { default: { limit: 100, window: 1 } } })]) {
        const hosts = await createKey(served, {
          scopes: ['items:read'],
          rateLimit: { limit: 1, window: 3_600 },
        });
        const browser = await signIn(served);
        const patch = (rateLimit: { limit: number; window: number } | null) =>
          portal(served, 'PATCH', `/keys/${hosts.key.id}`, browser, { json: { rateLimit } });
        for (const looser of [null, { limit: 1_000_000_000, window: 1 }, { limit: 2, window: 3_600 }]) {
          const reply = await patch(looser);
          expect(reply.status, JSON.stringify(looser)).toBe(403);
          expect(reply.body).toMatchObject({
            error: {
              code: 'forbidden',
              details: [{ path: 'rateLimit', ceiling: { limit: 1, window: 3_600 } }],
            },
          });
        }
        const lower = await patch({ limit: 1, window: 7_200 });
        expect(lower.body).toMatchObject({ key: { rateLimit: { limit: 1, window: 7_200 } } });
        // Lowered, it is still the host's: the session cannot raise it back.
        expect((await patch({ limit: 1, window: 3_600 })).status).toBe(403);
        // The host can: its change is not capped, and its null leaves the limit to the session.
        const byHost = await call(served, 'PATCH', `/admin/keys/${hosts.key.id}`, {
          token: await admin(served),
          json: { rateLimit: null },
        });
        expect(byHost.status, byHost.text).toBe(200);
        expect((await patch({ limit: 50, window: 1 })).status).toBe(200);
        expect((await patch(null)).status).toBe(200);
      }
    });

    it('reads its cookie beside an Authorization header of another scheme (a page behind HTTP Basic auth)', async () => {
      const browser = await signIn(ctx);
      const reply = await portal(ctx, 'GET', '/session', browser, {
        headers: { authorization: 'Basic dXNlcjpwYXNz' },
      });
      expect(reply.status).toBe(200);
    });

    it('refuses a CSRF token with anything after it', async () => {
      const browser = await signIn(ctx);
      for (const csrfToken of [
        `${browser.csrfToken}zz`,
        `${browser.csrfToken}0`,
        browser.csrfToken.toUpperCase(),
      ]) {
        const reply = await portal(
          ctx,
          'POST',
          '/keys',
          { ...browser, csrfToken },
          { json: { name: 'k', scopes: ['items:read'] } },
        );
        expect(reply.status).toBe(403);
      }
    });
  });
}
