import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, ApiError } from '../app/api-client.js';

/*
 * The browser app's API client against a real HTTP server that records what reached it and
 * answers as the portal API's envelope does.
 */
interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

let server: Server;
let base: string;
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      res.setHeader('content-type', 'application/json');
      if (req.url === '/portal/api/sign-out') {
        res.statusCode = 204;
        res.end();
      } else if (req.url === '/portal/api/webhooks') {
        res.statusCode = 400;
        res.end(
          JSON.stringify({
            error: {
              code: 'validation_failed',
              message: 'The request is not valid.',
              details: [{ path: 'url', message: 'must be an https:// URL' }],
            },
          }),
        );
      } else if (req.url === '/portal/api/keys/replaced') {
        res.statusCode = 401;
        res.end(
          JSON.stringify({
            error: {
              code: 'invalid_portal_session',
              message: 'This browser opened another portal session.',
              details: [{ message: 'This browser opened another portal session.', reason: 'replaced' }],
            },
          }),
        );
      } else if (req.url === '/portal/api/keys/gone') {
        res.statusCode = 401;
        res.end(
          JSON.stringify({ error: { code: 'invalid_portal_session', message: 'Your session has ended.' } }),
        );
      } else {
        res.end(JSON.stringify({ ok: true }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/portal`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const last = () => seen[seen.length - 1]!;

describe("the app's API client", () => {
  it('sends x-csrf-token on every non-GET call, never on a GET, and no authorization without a session token', async () => {
    const client = new ApiClient({ basePath: base, onSessionEnded: () => {} });
    client.holdSession('csrf_1');
    await client.get('/keys', { cursor: 'abc', status: null });
    expect(last()).toMatchObject({ method: 'GET', url: '/portal/api/keys?cursor=abc' });
    expect(last().headers['x-csrf-token']).toBeUndefined();
    expect(last().headers.authorization).toBeUndefined();

    await client.post('/keys', { name: 'ci', scopes: [] });
    expect(last()).toMatchObject({ method: 'POST', body: '{"name":"ci","scopes":[]}' });
    expect(last().headers['x-csrf-token']).toBe('csrf_1');
    expect(last().headers['content-type']).toBe('application/json');
    await client.patch('/keys/key_1', { rateLimit: null });
    expect(last().headers['x-csrf-token']).toBe('csrf_1');
    await client.delete('/keys/key_1');
    expect(last()).toMatchObject({ method: 'DELETE', body: '' });
    expect(last().headers['x-csrf-token']).toBe('csrf_1');
  });

  it('sends the embedded session token as a bearer on every call, and forgets both tokens on sign-out', async () => {
    const client = new ApiClient({ basePath: base, onSessionEnded: () => {} });
    client.holdSession('csrf_2', 'kps_token');
    await client.get('/session');
    expect(last().headers.authorization).toBe('Bearer kps_token');
    expect(await client.post('/sign-out')).toBeUndefined();
    expect(last().headers.authorization).toBe('Bearer kps_token');
    client.forgetSession();
    await client.get('/session');
    expect(last().headers.authorization).toBeUndefined();
  });

  it('turns the error envelope into an ApiError whose field messages sit by their fields', async () => {
    const client = new ApiClient({ basePath: base, onSessionEnded: () => {} });
    const error = await client
      .post('/webhooks', { url: 'http://x', events: [] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      status: 400,
      code: 'validation_failed',
      message: 'The request is not valid.',
    });
    expect((error as ApiError).fieldMessage('url')).toBe('must be an https:// URL');
    expect((error as ApiError).fieldMessage('events')).toBeUndefined();
  });

  it('ends the session on a 401, once, unless the caller explains the 401 itself (the exchange)', async () => {
    let ended = 0;
    const client = new ApiClient({
      basePath: base,
      onSessionEnded: (reason) => {
        expect(reason).toBe('ended');
        ended++;
      },
    });
    client.holdSession('csrf_3', 'kps_3');
    await expect(client.call('GET', '/keys/gone', undefined, { quiet401: true })).rejects.toMatchObject({
      status: 401,
    });
    expect(ended).toBe(0);
    await expect(client.get('/keys/gone')).rejects.toMatchObject({ code: 'invalid_portal_session' });
    expect(ended).toBe(1);
    await client.get('/session');
    expect(last().headers.authorization).toBeUndefined();
  });

  it('names its session on every call, and tells a session replaced in another tab from one that ended', async () => {
    const reasons: string[] = [];
    const client = new ApiClient({ basePath: base, onSessionEnded: (reason) => reasons.push(reason) });
    await client.get('/session');
    expect(last().headers['x-portal-session']).toBeUndefined();
    client.holdSession('csrf_4', undefined, 'ps_4');
    await client.get('/keys');
    expect(last().headers['x-portal-session']).toBe('ps_4');
    await client.delete('/keys/key_1');
    expect(last().headers['x-portal-session']).toBe('ps_4');
    await expect(client.get('/keys/replaced')).rejects.toMatchObject({ status: 401 });
    expect(reasons).toEqual(['replaced']);
    await client.get('/session');
    expect(last().headers['x-portal-session']).toBeUndefined();
  });

  it('drops the bearer token once the session is the cookie', async () => {
    const client = new ApiClient({ basePath: base, onSessionEnded: () => {} });
    client.holdSession('csrf_5', 'kps_5', 'ps_5');
    expect(client.inMemory).toBe(true);
    client.useCookie();
    expect(client.inMemory).toBe(false);
    await client.post('/keys', {});
    expect(last().headers.authorization).toBeUndefined();
    expect(last().headers['x-csrf-token']).toBe('csrf_5');
    expect(last().headers['x-portal-session']).toBe('ps_5');
  });

  it('says the portal could not be reached when nothing answers', async () => {
    const client = new ApiClient({ basePath: 'http://127.0.0.1:1/portal', onSessionEnded: () => {} });
    await expect(client.get('/session')).rejects.toMatchObject({ status: 0, code: 'network' });
  });
});
