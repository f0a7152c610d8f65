import { adminToken, rawRequest } from '@keyhook/testing/support';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_DATA_BODY_BYTES } from '../src/data-plane/schemas.js';
import { backends, startDataPlane } from './data-plane.js';

/** Cases per store: every route of the served OpenAPI document, with hostile parameters, bodies and credentials. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);

/** Cases per store of the raw connections: bodies up to 11 MiB make each dearer. */
const RAW_RUNS = Math.max(1, Math.floor(RUNS / 10));
const MiB = 1024 * 1024;
/** 1 MiB past the data plane's body limit. */
const PAST_DATA_LIMIT = MAX_DATA_BODY_BYTES + MiB;

/** Raw path and query bytes: percent-encoded NUL, an unpaired surrogate's UTF-8, broken escapes. */
const HOSTILE_SEGMENTS = [
  'a%00b',
  '%00',
  'a%ED%A0%80b',
  '%ED%B0%80',
  '%E0%A4%A',
  '%%',
  '..',
  '%2e%2e',
  'x'.repeat(300),
  '%F0%9F%92%A5',
  '',
];

/** Strings a store cannot keep as they came (most often), and others that are merely odd. */
const hostileText = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('a\u0000b', 'a\ud800b', '\udc00', 'plain') },
  fc.constantFrom('\u0000', '\ud83d', '😀', '\u202e', ' ', 'x'.repeat(5000)),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 40 }),
);

const itemKey = fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/);
const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });

/** Item fields as a caller sends them, with hostile text in each. */
const itemFields = fc.record(
  {
    content: hostileText,
    title: maybe(fc.oneof(hostileText, fc.constant(null))),
    url: maybe(hostileText.map((t) => `https://docs.example.com/${t}`)),
    metadata: maybe(fc.dictionary(hostileText, hostileText, { maxKeys: 2 })),
  },
  { requiredKeys: ['content'] },
);
const keyedItem = fc.tuple(itemKey, itemFields).map(([key, fields]) => ({ key, ...fields }));

/** For each route that takes a body, one shaped like it, with hostile text where text goes. */
const SHAPES: [RegExp, fc.Arbitrary<unknown>][] = [
  [
    /\/items\/batch$/,
    fc.record(
      {
        upsert: fc.array(keyedItem, { maxLength: 3 }),
        delete: fc.array(fc.oneof(itemKey, hostileText), { maxLength: 2 }),
      },
      { requiredKeys: [] },
    ),
  ],
  [/\/items\/\{key\}$/, itemFields],
  [/\/items$/, fc.record({ items: fc.array(keyedItem, { maxLength: 3 }) })],
  [
    /\/sources(\/\{sourceId\})?$/,
    fc.record({ name: hostileText, description: maybe(hostileText) }, { requiredKeys: [] }),
  ],
  [
    /\/admin\/keys$/,
    fc.record(
      { name: hostileText, scopes: fc.constant(['sources:read']), expiresAt: maybe(hostileText) },
      { requiredKeys: ['name', 'scopes'] },
    ),
  ],
  [
    /\/admin\/webhooks$/,
    fc.record({
      url: hostileText.map((t) => `https://hooks.example.com/${t}`),
      events: fc.constant(['run.completed']),
    }),
  ],
  [
    /\/admin\/webhooks\/\{id\}$/,
    fc.record({ status: maybe(fc.constantFrom('active', 'disabled')), url: maybe(hostileText) }),
  ],
];
const shapedBodyFor = (template: string) =>
  SHAPES.find(([pattern]) => pattern.test(template))?.[1] ?? fc.oneof(...SHAPES.map(([, shape]) => shape));

/** Any JSON, whose strings (keys included) may be hostile. */
const hostileJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileText,
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileText, tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe.each(backends)('every route under hostile input, on $name', (backend) => {
  let plane: Awaited<ReturnType<typeof startDataPlane>>;
  let routes: [string, string[]][];
  /** Ids that exist, by the path parameter's name in the document. */
  const real: Record<string, string[]> = {};

  beforeAll(async () => {
    plane = await startDataPlane(backend);
    const { api, admin, running } = plane;
    const sourceId = await api.createSource();
    await api.put(sourceId, 'k1', 'hello');
    const run = await api.startRun(sourceId);
    const hook = await running.client.request('POST', '/api/v1/admin/webhooks', admin, {
      url: 'https://hooks.example.com/in',
      events: ['run.completed'],
    });
    const keys = await running.client.request('GET', '/api/v1/admin/keys', admin);
    real['sourceId'] = [sourceId];
    // Deactivating is for good: it gets a source of its own, so the others stay writable.
    real['deactivated'] = [await api.createSource('doomed')];
    real['runId'] = [run.id];
    real['key'] = ['k1'];
    real['id'] = [hook.body.webhook.id, keys.body.data[0].id];
    const doc = await running.client.request('GET', '/api/v1/openapi.json');
    routes = Object.entries(doc.body.paths as Record<string, Record<string, unknown>>).map(([path, ops]) => [
      path,
      Object.keys(ops).map((method) => method.toUpperCase()),
    ]);
    expect(routes.length).toBeGreaterThan(20);
  }, 60_000);
  afterAll(async () => plane?.close());

  const idsFor = (template: string, name: string) =>
    real[template.endsWith('/deactivate') ? 'deactivated' : name] ?? ['x'];
  /** A path of the route `template`: mostly ids that exist, sometimes hostile or random segments. */
  const fill = (template: string) =>
    fc
      .tuple(
        ...template
          .split('/')
          .map((part) =>
            part.startsWith('{')
              ? fc.oneof(
                  { weight: 8, arbitrary: fc.constantFrom(...idsFor(template, part.slice(1, -1))) },
                  fc.constantFrom(...HOSTILE_SEGMENTS),
                  fc.webSegment(),
                )
              : fc.constant(part),
          ),
      )
      .map((parts) => parts.join('/'));

  it(`answers ${RUNS} hostile requests with no 5xx, and every error in the envelope with a request id`, async () => {
    const { admin, key, running } = plane;
    const otherTenant = await adminToken({ tenantId: 'other', subject: 'intruder' });
    const request = fc.constantFrom(...routes).chain(([template, methods]) =>
      fc.record({
        path: fill(template),
        method: fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...methods) },
          fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
        ),
        query: fc.oneof(
          fc.constant(''),
          fc.constantFrom(...HOSTILE_SEGMENTS).map((v) => `?before=${v}&limit=${v}&status=${v}`),
          fc.constantFrom(
            '?limit=1',
            '?limit=0',
            '?limit=-1',
            '?limit=1e99',
            '?status=failed',
            '?before=zzz',
          ),
          fc.webQueryParameters().map((q) => `?${q}`),
        ),
        // Mostly the credential the route takes; sometimes another tenant's, a wrong kind, or none.
        auth: fc.oneof(
          {
            weight: 6,
            arbitrary: fc.constant(`Bearer ${template.startsWith('/api/v1/admin') ? admin : key}`),
          },
          fc.constantFrom(
            `Bearer ${key}`,
            `Bearer ${admin}`,
            `Bearer ${otherTenant}`,
            'Bearer sk_live_x',
            undefined,
          ),
        ),
        body: fc.oneof(
          { weight: 6, arbitrary: shapedBodyFor(template).map((v) => JSON.stringify(v)) },
          hostileJson.map((v) => JSON.stringify(v)),
          fc.string({ unit: 'binary', maxLength: 60 }),
          fc.constant(''),
        ),
        contentType: fc.oneof(
          { weight: 6, arbitrary: fc.constant('application/json') },
          fc.constantFrom('text/plain', 'application/json; charset=latin1', undefined),
        ),
      }),
    );

    const statuses: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const headers: Record<string, string> = {};
        if (r.auth) headers['authorization'] = r.auth;
        if (r.contentType) headers['content-type'] = r.contentType;
        const response = await fetch(`${running.client.baseUrl}${r.path}${r.query}`, {
          method: r.method,
          headers,
          body: r.method === 'GET' || r.method === 'DELETE' ? undefined : r.body,
        });
        const text = await response.text();
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        const where = `${r.method} ${r.path}${r.query} → ${response.status} ${text.slice(0, 200)}`;
        expect(response.status, where).toBeLessThan(500);
        if (response.status >= 400) {
          expect(response.headers.get('x-request-id'), where).toMatch(/^req_/);
          const body = JSON.parse(text);
          expect(typeof body.error?.code, where).toBe('string');
          expect(typeof body.error?.message, where).toBe('string');
        }
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    const answered = Object.values(statuses).reduce((a, b) => a + b, 0);
    expect(answered).toBe(RUNS);
    // The cases reach the routes' work, not only their doors.
    expect((statuses['200'] ?? 0) + (statuses['201'] ?? 0)).toBeGreaterThan(RUNS / 20);
    console.log(`${backend.name}: ${RUNS} hostile requests, answers by status ${JSON.stringify(statuses)}`);
  }, 600_000);

  it(`answers ${RAW_RUNS} hostile connections (no Host, CONNECT and other methods, bodies past the limit) the same way`, async () => {
    const { admin, key, running } = plane;
    const port = Number(new URL(running.client.baseUrl).port);
    // Just past the limit of keyhook's own routes.
    const pastKeyhookLimit = running.server.keyhook.maxBodyBytes + 1;
    const connection = fc.constantFrom(...routes).chain(([template, methods]) =>
      fc.record({
        path: fill(template),
        method: fc.oneof(
          { weight: 2, arbitrary: fc.constantFrom(...methods) },
          fc.constantFrom('CONNECT', 'PROPFIND', 'TRACE', 'MKCOL', 'PURGE', 'SEARCH', 'OPTIONS', 'LOCK'),
        ),
        host: fc.oneof({ weight: 3, arbitrary: fc.constant(true) }, fc.constant(false)),
        auth: fc.constantFrom(`Bearer ${template.startsWith('/api/v1/admin') ? admin : key}`, undefined),
        // Spaces: past a route's limit, or within it and not JSON; sent whole before the answer is read, or not.
        body: fc.option(
          fc.record({
            size: fc.constantFrom(pastKeyhookLimit, pastKeyhookLimit, 2 * MiB, PAST_DATA_LIMIT),
            chunked: fc.boolean(),
            writeFirst: fc.boolean(),
          }),
          { nil: undefined, freq: 2 },
        ),
      }),
    );

    const statuses: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(connection, async (c) => {
        const headers: string[] = [];
        if (c.host) headers.push('Host: x');
        if (c.auth) headers.push(`Authorization: ${c.auth}`);
        let body = Buffer.alloc(0);
        if (c.body) {
          headers.push('Content-Type: application/json');
          headers.push(c.body.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${c.body.size}`);
          const spaces = Buffer.alloc(c.body.size, 0x20);
          body = c.body.chunked
            ? Buffer.concat([
                Buffer.from(`${c.body.size.toString(16)}\r\n`),
                spaces,
                Buffer.from('\r\n0\r\n\r\n'),
              ])
            : spaces;
        }
        const head = `${c.method} ${c.path} HTTP/1.1\r\n${headers.map((line) => `${line}\r\n`).join('')}\r\n`;
        const reply = await rawRequest(port, head, body, {
          closeWithinMs: 0,
          writeFirst: c.body?.writeFirst ?? false,
        });
        statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
        const where = `${c.method} ${c.path} host=${c.host} body=${JSON.stringify(c.body)} → ${reply.status} ${reply.body.slice(0, 200)}`;
        expect(reply.status, where).toBeLessThan(500);
        expect(reply.headers['x-request-id'], where).toMatch(/^req_/);
        if (reply.status >= 400) {
          const parsed = JSON.parse(reply.body);
          expect(typeof parsed.error?.code, where).toBe('string');
          expect(typeof parsed.error?.message, where).toBe('string');
        }
      }),
      { numRuns: RAW_RUNS, endOnFailure: true },
    );
    // The new cases are reached: refusals of no Host, of CONNECT (404) and of bodies past the limit.
    expect(statuses['400']).toBeGreaterThan(0);
    expect(statuses['404']).toBeGreaterThan(0);
    expect(statuses['413']).toBeGreaterThan(0);
    console.log(
      `${backend.name}: ${RAW_RUNS} hostile connections, answers by status ${JSON.stringify(statuses)}`,
    );
  }, 600_000);
});
