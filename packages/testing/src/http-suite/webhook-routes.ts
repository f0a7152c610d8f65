import { describe, expect, it } from 'vitest';
import { admin, call } from './client.js';
import type { SuiteContext } from './suite-context.js';

const WEBHOOK_VIEW_FIELDS = [
  'createdAt',
  'deliveryRate',
  'description',
  'disabledAt',
  'disabledReason',
  'events',
  'id',
  'keyType',
  'previousSecretExpiresAt',
  'publicKey',
  'signatureScheme',
  'status',
  'updatedAt',
  'url',
];
const SECRET = /^whsec_[0-9a-f]{64}$/;

interface Created {
  webhook: { id: string; url: string; events: string[]; status: string; disabledReason: string | null };
  secret: string;
}

let counter = 0;
const uniqueUrl = () => `https://hooks.example.com/receiver/${++counter}`;

export function webhookCases(ctx: SuiteContext): void {
  const create = async (json: unknown, headers: Record<string, string> = {}, tenantId = 'tenant_a') =>
    call(ctx, 'POST', '/admin/webhooks', { token: await admin(ctx, tenantId), json, headers });
  const created = async (
    json: unknown = { url: uniqueUrl(), events: ['run.completed'] },
  ): Promise<Created> => {
    const reply = await create(json);
    expect(reply.status, reply.text).toBe(201);
    return reply.body as Created;
  };

  describe('webhook endpoints (docs/http-api.md §2–§4, docs/decisions.md §1, §5)', () => {
    it('POST /admin/webhooks → 201 { webhook, secret }: events as a sorted set, the URL normalised', async () => {
      const reply = await create({
        url: 'https://Hooks.Example.COM:443/receiver/../in?x=1',
        events: ['run.failed', 'run.completed', 'run.failed'],
      });
      expect(reply.status, reply.text).toBe(201);
      expect(Object.keys(reply.body).sort()).toEqual(['secret', 'webhook']);
      expect(Object.keys(reply.body.webhook).sort()).toEqual(WEBHOOK_VIEW_FIELDS);
      expect(reply.body.webhook).toMatchObject({
        url: 'https://hooks.example.com/in?x=1',
        events: ['run.completed', 'run.failed'],
        status: 'active',
        disabledReason: null,
        disabledAt: null,
        description: null,
        createdAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
      });
      expect(reply.body.webhook.id).toMatch(/^wh_[0-9a-z]{26}$/);
      expect(reply.body.secret).toMatch(SECRET);
      expect(reply.headers.get('cache-control')).toBe('no-store');
    });

    it('GET one, the list, PATCH and DELETE never carry the secret; a log line never does either', async () => {
      const token = await admin(ctx);
      const { webhook, secret } = await created();
      const rotated = await call(ctx, 'POST', `/admin/webhooks/${webhook.id}/rotate`, { token });
      const replies = [
        await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token }),
        await call(ctx, 'GET', '/admin/webhooks', { token }),
        await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, { token, json: { status: 'disabled' } }),
      ];
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(Object.keys(replies[0]!.body.webhook).sort()).toEqual(WEBHOOK_VIEW_FIELDS);
      expect(replies[1]!.body.data.map((w: { id: string }) => w.id)).toEqual([webhook.id]);
      for (const reply of replies) {
        expect(reply.text).not.toContain(secret);
        expect(reply.text).not.toContain(rotated.body.secret);
        expect(reply.text).not.toContain('whsec_');
      }
      // Paths that do log: a rejected admin session (warn) and a create that fails inside (error, with the cause).
      await call(ctx, 'GET', '/admin/webhooks', { token: 'not-a-jwt' });
      ctx.inserts.failNext(new Error('disk I/O error'));
      const failed = await create(
        { url: uniqueUrl(), events: ['run.completed'] },
        { 'idempotency-key': 'logged' },
      );
      expect(failed.status).toBe(500);
      expect(ctx.logs.length).toBeGreaterThanOrEqual(2);
      expect(ctx.logs.join('\n')).toContain('disk I/O error');
      for (const line of ctx.logs) {
        expect(line).not.toContain(secret);
        expect(line).not.toContain(rotated.body.secret);
        expect(line).not.toContain('whsec_');
      }
    });

    it('lists newest first with a cursor', async () => {
      const token = await admin(ctx);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.unshift((await created()).webhook.id);
        ctx.clock.advance(1_000);
      }
      const first = await call(ctx, 'GET', '/admin/webhooks?limit=2', { token });
      expect(first.body.data.map((w: { id: string }) => w.id)).toEqual(ids.slice(0, 2));
      const second = await call(ctx, 'GET', `/admin/webhooks?limit=2&cursor=${first.body.nextCursor}`, {
        token,
      });
      expect(second.body).toMatchObject({ nextCursor: null });
      expect(second.body.data.map((w: { id: string }) => w.id)).toEqual(ids.slice(2));
    });

    describe('events: a non-empty set of the five kinds', () => {
      for (const [label, events] of [
        ['omitted', undefined],
        ['empty', []],
        ['unknown', ['run.completed', 'run.exploded']],
        ['not an array', 'run.completed'],
      ] as const) {
        it(`${label} → 400 validation_failed naming events`, async () => {
          const reply = await create({ url: uniqueUrl(), ...(events !== undefined && { events }) });
          expect(reply.status).toBe(400);
          expect(reply.body.error.code).toBe('validation_failed');
          expect(reply.body.error.details.some((d: { path: string }) => d.path.startsWith('events'))).toBe(
            true,
          );
        });
      }
    });

    it('a URL outside the policy → 400 validation_failed naming url (https, userinfo, fragment, length, SSRF)', async () => {
      for (const url of [
        'http://hooks.example.com/x',
        'https://user:pw@hooks.example.com/x',
        'https://hooks.example.com/x#frag',
        `https://hooks.example.com/${'a'.repeat(2030)}`,
        'https://127.0.0.1/x',
        'https://2130706433/',
        'https://[::ffff:127.0.0.1]/',
        'https://169.254.169.254/latest/meta-data',
        'https://localhost/',
        'not a url',
      ]) {
        const reply = await create({ url, events: ['run.completed'] });
        expect(reply.status, url).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
        expect(reply.body.error.details[0].path).toBe('url');
      }
      expect((await create({ url: 'https://93.184.215.14/hook', events: ['run.completed'] })).status).toBe(
        201,
      );
    });

    it('unknown fields and wrong types → 400', async () => {
      expect((await create({ url: uniqueUrl(), events: ['run.completed'], secret: 'x' })).status).toBe(400);
      expect((await create({ url: 42, events: ['run.completed'] })).status).toBe(400);
      expect((await create([])).status).toBe(400);
    });
  });

  describe('creation rules 1–7 (docs/http-api.md §4.3)', () => {
    it('rule 1: https only outside development; http is refused', async () => {
      const refused = await create({ url: 'http://hooks.example.com/plain', events: ['run.completed'] });
      expect(refused.status).toBe(400);
      expect(refused.body.error.details[0]).toMatchObject({ path: 'url' });
      expect(
        (await create({ url: 'https://hooks.example.com/plain', events: ['run.completed'] })).status,
      ).toBe(201);
    });

    it('rule 2: same Idempotency-Key and payload → the original webhook and secret, replayed', async () => {
      const body = { url: uniqueUrl(), events: ['run.completed', 'apply.failed'] };
      const first = await create(body, { 'idempotency-key': 'create-1' });
      expect(first.status).toBe(201);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      // Key order and whitespace do not change the payload.
      const again = await call(ctx, 'POST', '/admin/webhooks', {
        token: await admin(ctx),
        body: new TextEncoder().encode(
          `{ "events": ["run.completed", "apply.failed"],  "url": "${body.url}" }`,
        ),
        headers: { 'content-type': 'application/json', 'idempotency-key': 'create-1' },
      });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
      const list = await call(ctx, 'GET', '/admin/webhooks', { token: await admin(ctx) });
      expect(list.body.data).toHaveLength(1);
    });

    it('rule 3: same key, different payload → 409 idempotency_conflict', async () => {
      await create({ url: uniqueUrl(), events: ['run.completed'] }, { 'idempotency-key': 'create-2' });
      const reply = await create(
        { url: uniqueUrl(), events: ['run.completed'] },
        { 'idempotency-key': 'create-2' },
      );
      expect(reply.status).toBe(409);
      expect(reply.body.error.code).toBe('idempotency_conflict');
    });

    it('rule 4: same key while the first create is in flight → 409 idempotency_in_progress', async () => {
      const body = { url: uniqueUrl(), events: ['run.completed'] };
      const gate = ctx.inserts.holdNext();
      const first = create(body, { 'idempotency-key': 'create-3' });
      await gate.reached;
      const second = await create(body, { 'idempotency-key': 'create-3' });
      expect(second.status).toBe(409);
      expect(second.body.error.code).toBe('idempotency_in_progress');
      gate.release();
      expect((await first).status).toBe(201);
      const third = await create(body, { 'idempotency-key': 'create-3' });
      expect(third.status).toBe(201);
      expect(third.body).toEqual((await first).body);
    });

    it('rule 5: a second active webhook with the same url and event set → 409 webhook_conflict', async () => {
      const url = uniqueUrl();
      await created({ url, events: ['run.completed', 'run.failed'] });
      const twin = await create({ url, events: ['run.failed', 'run.completed', 'run.failed'] });
      expect(twin.status).toBe(409);
      expect(twin.body.error.code).toBe('webhook_conflict');
      // The same URL with a different event set is allowed.
      expect((await create({ url, events: ['run.failed'] })).status).toBe(201);
    });

    it('rule 6: without the header, each request creates an independent webhook', async () => {
      const a = await created({ url: uniqueUrl(), events: ['run.completed'] });
      const b = await created({ url: uniqueUrl(), events: ['run.completed'] });
      expect(a.webhook.id).not.toBe(b.webhook.id);
      expect(a.secret).not.toBe(b.secret);
    });

    it('rule 7: disabling and rotating ignore Idempotency-Key', async () => {
      const token = await admin(ctx);
      const { webhook } = await created();
      const headers = { 'idempotency-key': 'same-for-all' };
      const r1 = await call(ctx, 'POST', `/admin/webhooks/${webhook.id}/rotate`, { token, headers });
      const r2 = await call(ctx, 'POST', `/admin/webhooks/${webhook.id}/rotate`, { token, headers });
      expect([r1.status, r2.status]).toEqual([200, 200]);
      expect(r1.body.secret).not.toBe(r2.body.secret);
      expect(r2.headers.get('idempotent-replayed')).toBeNull();
      const off = await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
        token,
        headers,
        json: { status: 'disabled' },
      });
      const on = await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
        token,
        headers,
        json: { status: 'active' },
      });
      expect([off.body.webhook.status, on.body.webhook.status]).toEqual(['disabled', 'active']);
    });
  });

  describe('Idempotency-Key handling (docs/decisions.md §7)', () => {
    it('a key that is empty, too long or not printable ASCII → 400 validation_failed', async () => {
      for (const key of ['x'.repeat(256), 'caf\u00e9']) {
        const reply = await create(
          { url: uniqueUrl(), events: ['run.completed'] },
          { 'idempotency-key': key },
        );
        expect(reply.status).toBe(400);
        expect(reply.body.error.details[0].path).toBe('Idempotency-Key');
      }
      const longest = await create(
        { url: uniqueUrl(), events: ['run.completed'] },
        { 'idempotency-key': 'k'.repeat(255) },
      );
      expect(longest.status).toBe(201);
    });

    it('a body nested 3000 levels deep with a key → 400, not a 500', async () => {
      const deep = `${'['.repeat(3000)}${']'.repeat(3000)}`;
      const reply = await call(ctx, 'POST', '/admin/webhooks', {
        token: await admin(ctx),
        body: new TextEncoder().encode(`{"url":"${uniqueUrl()}","events":${deep}}`),
        headers: { 'content-type': 'application/json', 'idempotency-key': 'deep' },
      });
      expect(reply.status).toBe(400);
      expect(reply.body.error.code).toBe('validation_failed');
    });

    it('a "__proto__" member is part of the payload: adding one under the same key → 409 idempotency_conflict', async () => {
      const url = uniqueUrl();
      const send = async (extra: string) =>
        call(ctx, 'POST', '/admin/webhooks', {
          token: await admin(ctx),
          body: new TextEncoder().encode(`{"url":"${url}","events":["run.completed"]${extra}}`),
          headers: { 'content-type': 'application/json', 'idempotency-key': 'proto' },
        });
      expect((await send('')).status).toBe(201);
      const reply = await send(',"__proto__":{"a":1}');
      expect(reply.status).toBe(409);
      expect(reply.body.error.code).toBe('idempotency_conflict');
    });

    it('a validation failure is not stored: the same key then works with a fixed body', async () => {
      const url = uniqueUrl();
      const bad = await create({ url, events: [] }, { 'idempotency-key': 'fix-me' });
      expect(bad.status).toBe(400);
      const good = await create({ url, events: ['run.completed'] }, { 'idempotency-key': 'fix-me' });
      expect(good.status).toBe(201);
      expect(good.headers.get('idempotent-replayed')).toBeNull();
    });

    it('a webhook_conflict is stored and replayed like any answer', async () => {
      const url = uniqueUrl();
      await created({ url, events: ['run.completed'] });
      const first = await create({ url, events: ['run.completed'] }, { 'idempotency-key': 'twin' });
      const again = await create({ url, events: ['run.completed'] }, { 'idempotency-key': 'twin' });
      expect([first.status, again.status]).toEqual([409, 409]);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
    });

    it('after the 24 h retention the key is free again', async () => {
      const token = await admin(ctx);
      const body = { url: uniqueUrl(), events: ['run.completed'] };
      const first = await create(body, { 'idempotency-key': 'day-old' });
      await call(ctx, 'PATCH', `/admin/webhooks/${first.body.webhook.id}`, {
        token,
        json: { status: 'disabled' },
      });
      ctx.clock.advance(24 * 60 * 60 * 1000 - 1);
      const replay = await create(body, { 'idempotency-key': 'day-old' });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      ctx.clock.advance(1);
      const fresh = await create(body, { 'idempotency-key': 'day-old' });
      expect(fresh.status).toBe(201);
      expect(fresh.headers.get('idempotent-replayed')).toBeNull();
      expect(fresh.body.webhook.id).not.toBe(first.body.webhook.id);
    });

    it('50 concurrent creates of active twins without the header → exactly one 201, the rest 409 webhook_conflict', async () => {
      const body = { url: uniqueUrl(), events: ['run.completed'] };
      const replies = await Promise.all(Array.from({ length: 50 }, () => create(body)));
      expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
      const refused = replies.filter((r) => r.status === 409);
      expect(refused).toHaveLength(49);
      for (const r of refused) expect(r.body.error.code).toBe('webhook_conflict');
    });

    it('100 concurrent identical creates with one key → one webhook and one secret', async () => {
      const body = { url: uniqueUrl(), events: ['run.completed'] };
      const replies = await Promise.all(
        Array.from({ length: 100 }, () => create(body, { 'idempotency-key': 'burst' })),
      );
      const ok = replies.filter((r) => r.status === 201);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      for (const r of replies) {
        if (r.status !== 201) expect(r.body.error.code).toBe('idempotency_in_progress');
      }
      expect(new Set(ok.map((r) => r.body.secret)).size).toBe(1);
      expect(new Set(ok.map((r) => r.body.webhook.id)).size).toBe(1);
      const list = await call(ctx, 'GET', '/admin/webhooks', { token: await admin(ctx) });
      expect(list.body.data).toHaveLength(1);
    });
  });

  describe('status, rotation and deletion', () => {
    it('PATCH disabled → manual; the same url and events may then be registered again (docs/http-api.md §3)', async () => {
      const token = await admin(ctx);
      const body = { url: uniqueUrl(), events: ['run.completed'] };
      const first = await created(body);
      ctx.clock.advance(5_000);
      const off = await call(ctx, 'PATCH', `/admin/webhooks/${first.webhook.id}`, {
        token,
        json: { status: 'disabled' },
      });
      expect(off.status).toBe(200);
      expect(off.body.webhook).toMatchObject({
        status: 'disabled',
        disabledReason: 'manual',
        disabledAt: '2026-01-01T00:00:05.000Z',
        updatedAt: '2026-01-01T00:00:05.000Z',
      });
      await created(body);
      // Re-enabling beside the now-active twin (docs/decisions.md §5.7).
      const on = await call(ctx, 'PATCH', `/admin/webhooks/${first.webhook.id}`, {
        token,
        json: { status: 'active' },
      });
      expect(on.status).toBe(409);
      expect(on.body.error.code).toBe('webhook_conflict');
    });

    it('takes a description at create and by PATCH, alone or with the URL; blank clears it; text that misleads → 400', async () => {
      const token = await admin(ctx);
      const { webhook } = await created({
        url: uniqueUrl(),
        events: ['run.completed'],
        description: '  Production billing sync ',
      });
      expect(webhook).toMatchObject({ description: 'Production billing sync' });
      const patch = (json: unknown) => call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, { token, json });
      const renamed = await patch({ description: 'Billing, line 1\nline 2' });
      expect(renamed.body.webhook).toMatchObject({
        description: 'Billing, line 1\nline 2',
        url: webhook.url,
      });
      const moved = await patch({ url: `${webhook.url}/v2` });
      expect(moved.body.webhook).toMatchObject({ description: 'Billing, line 1\nline 2' });
      expect((await patch({ description: '   ' })).body.webhook.description).toBeNull();
      expect((await patch({ description: 'again' })).body.webhook.description).toBe('again');
      expect((await patch({ description: null })).body.webhook.description).toBeNull();
      for (const description of ['evil\u202Egnp.exe', 'bell\u0007', 'x'.repeat(501), 42]) {
        const reply = await patch({ description });
        expect(reply.status, JSON.stringify(description)).toBe(400);
        expect(reply.body.error).toMatchObject({
          code: 'validation_failed',
          details: [{ path: 'description' }],
        });
        const refused = await create({ url: uniqueUrl(), events: ['run.completed'], description });
        expect(refused.status).toBe(400);
      }
      // A status change stands alone.
      expect((await patch({ status: 'disabled', description: 'x' })).status).toBe(400);
      const read = await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token });
      expect(read.body.webhook.description).toBeNull();
    });

    it('PATCH validates its body: status (two values), or url and events, never both in one request', async () => {
      const token = await admin(ctx);
      const { webhook } = await created();
      for (const json of [
        {},
        { status: 'paused' },
        { status: 'disabled', url: 'https://x.example' },
        { status: 'active', events: ['run.failed'] },
        { events: [] },
        { events: ['run.exploded'] },
        { url: 'http://x.example/' },
        { url: 42 },
        { name: 'extra' },
      ]) {
        const reply = await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, { token, json });
        expect(reply.status, JSON.stringify(json)).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
      }
      const unknown = await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
        token,
        json: { events: ['run.exploded'] },
      });
      expect(unknown.body.error.message).toContain('must be one of "run.completed", "run.failed"');
      const after = await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token });
      expect(after.body.webhook).toEqual(webhook);
    });

    it('PATCH url and/or events → 200: the part not sent is kept; onto an active twin → 409 webhook_conflict', async () => {
      const token = await admin(ctx);
      const { webhook } = await created({ url: uniqueUrl(), events: ['run.completed'] });
      const patch = (json: unknown) => call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, { token, json });
      const evented = await patch({ events: ['run.failed', 'apply.failed', 'run.failed'] });
      expect(evented.status, evented.text).toBe(200);
      expect(evented.body.webhook).toMatchObject({
        url: webhook.url,
        events: ['apply.failed', 'run.failed'],
      });
      const moved = await patch({ url: 'https://Hooks.Example.com/moved/../here' });
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body.webhook).toMatchObject({
        url: 'https://hooks.example.com/here',
        events: ['apply.failed', 'run.failed'],
        status: 'active',
      });
      const twin = await created({ url: uniqueUrl(), events: ['run.conflict'] });
      const onto = await patch({ url: twin.webhook.url, events: ['run.conflict'] });
      expect(onto.status).toBe(409);
      expect(onto.body.error.code).toBe('webhook_conflict');
      const kept = await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token });
      expect(kept.body.webhook).toEqual(moved.body.webhook);
    });

    it('POST rotate → 200 { webhook, secret } with a new secret', async () => {
      const { webhook, secret } = await created();
      const reply = await call(ctx, 'POST', `/admin/webhooks/${webhook.id}/rotate`, {
        token: await admin(ctx),
      });
      expect(reply.status).toBe(200);
      expect(reply.body.webhook.id).toBe(webhook.id);
      expect(reply.body.secret).toMatch(SECRET);
      expect(reply.body.secret).not.toBe(secret);
      // docs/http-api.md §3: rotate works in any state and leaves the state as it was.
      const token = await admin(ctx);
      await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, { token, json: { status: 'disabled' } });
      const whileDisabled = await call(ctx, 'POST', `/admin/webhooks/${webhook.id}/rotate`, { token });
      expect(whileDisabled.status).toBe(200);
      expect(whileDisabled.body.webhook).toMatchObject({ status: 'disabled', disabledReason: 'manual' });
      expect(whileDisabled.body.secret).not.toBe(reply.body.secret);
    });

    it('POST rotate with { overlapSeconds } keeps the old secret signing until then; bad values → 400', async () => {
      const { webhook } = await created();
      const token = await admin(ctx);
      const rotate = (json?: unknown) =>
        call(ctx, 'POST', `/admin/webhooks/${webhook.id}/rotate`, {
          token,
          ...(json !== undefined && { json }),
        });
      const overlapping = await rotate({ overlapSeconds: 3600 });
      expect(overlapping.status, overlapping.text).toBe(200);
      expect(overlapping.body.webhook.previousSecretExpiresAt).toBe(
        new Date(ctx.clock.now().getTime() + 3_600_000).toISOString(),
      );
      const read = await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token });
      expect(read.body.webhook.previousSecretExpiresAt).toBe(
        overlapping.body.webhook.previousSecretExpiresAt,
      );
      for (const json of [
        { overlapSeconds: -1 },
        { overlapSeconds: 0.5 },
        { overlapSeconds: '60' },
        { overlapSeconds: 604_801 },
        { ttl: 5 },
      ]) {
        const reply = await rotate(json);
        expect(reply.status, JSON.stringify(json)).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
      }
      const zero = await rotate({ overlapSeconds: 0 });
      expect(zero.status).toBe(200);
      expect(zero.body.webhook.previousSecretExpiresAt).toBeNull();
    });

    it('DELETE → 204 with no body; then the webhook is gone', async () => {
      const token = await admin(ctx);
      const { webhook } = await created();
      const reply = await call(ctx, 'DELETE', `/admin/webhooks/${webhook.id}`, { token });
      expect(reply.status).toBe(204);
      expect(reply.text).toBe('');
      expect((await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token })).status).toBe(404);
      expect((await call(ctx, 'DELETE', `/admin/webhooks/${webhook.id}`, { token })).status).toBe(404);
    });

    it('unknown and malformed ids → 404 not_found', async () => {
      const token = await admin(ctx);
      for (const id of ['wh_00000000000000000000000000', 'nope', 'key_00000000000000000000000000']) {
        const reply = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
        expect(reply.status).toBe(404);
        expect(reply.body.error.code).toBe('not_found');
      }
    });
  });

  describe('tenant isolation', () => {
    it('another tenant’s webhook id → 404 for GET, PATCH, rotate and DELETE, and it stays as it was', async () => {
      const { webhook } = await created();
      const other = await admin(ctx, 'tenant_b');
      const replies = [
        await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token: other }),
        await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
          token: other,
          json: { status: 'disabled' },
        }),
        await call(ctx, 'PATCH', `/admin/webhooks/${webhook.id}`, {
          token: other,
          json: { url: 'https://hooks.example.com/stolen' },
        }),
        await call(ctx, 'POST', `/admin/webhooks/${webhook.id}/rotate`, { token: other }),
        await call(ctx, 'DELETE', `/admin/webhooks/${webhook.id}`, { token: other }),
      ];
      for (const reply of replies) {
        expect(reply.status).toBe(404);
        expect(reply.body.error.code).toBe('not_found');
      }
      const mine = await call(ctx, 'GET', `/admin/webhooks/${webhook.id}`, { token: await admin(ctx) });
      expect(mine.body.webhook.status).toBe('active');
      expect((await call(ctx, 'GET', '/admin/webhooks', { token: other })).body.data).toEqual([]);
    });

    it('an Idempotency-Key reused by another tenant creates that tenant’s own webhook', async () => {
      const body = { url: uniqueUrl(), events: ['run.completed'] };
      const a = await create(body, { 'idempotency-key': 'shared-key' }, 'tenant_a');
      const b = await create(body, { 'idempotency-key': 'shared-key' }, 'tenant_b');
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(b.headers.get('idempotent-replayed')).toBeNull();
      expect(b.body.webhook.id).not.toBe(a.body.webhook.id);
      expect(b.body.secret).not.toBe(a.body.secret);
    });
  });
}
