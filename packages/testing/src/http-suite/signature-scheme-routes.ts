import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { admin, call } from './client.js';
import type { SuiteContext } from './suite-context.js';

let counter = 0;
const uniqueUrl = () => `https://hooks.example.com/scheme/${++counter}`;

/** An endpoint's signatureScheme over HTTP (docs/http-api.md §2, §6.3; docs/decisions.md §6.9). */
export function signatureSchemeCases(ctx: SuiteContext): void {
  describe('webhook signatureScheme (docs/decisions.md §6.9)', () => {
    it('create without one → keyhook; with standard-webhooks → shown by create, GET and the list', async () => {
      const token = await admin(ctx);
      const plain = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'] },
      });
      expect(plain.status, plain.text).toBe(201);
      expect(plain.body.webhook.signatureScheme).toBe('keyhook');
      const standard = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'], signatureScheme: 'standard-webhooks' },
      });
      expect(standard.status, standard.text).toBe(201);
      expect(standard.body.webhook.signatureScheme).toBe('standard-webhooks');
      expect(standard.body.secret).toMatch(/^whsec_[0-9a-f]{64}$/);
      const id = standard.body.webhook.id;
      const read = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(read.body.webhook).toEqual(standard.body.webhook);
      const list = await call(ctx, 'GET', '/admin/webhooks', { token });
      const schemes = new Map(
        list.body.data.map((w: { id: string; signatureScheme: string }) => [w.id, w.signatureScheme]),
      );
      expect(schemes.get(id)).toBe('standard-webhooks');
      expect(schemes.get(plain.body.webhook.id)).toBe('keyhook');
    });

    it('PATCH signatureScheme → 200, alone or with url and events; the rest is kept', async () => {
      const token = await admin(ctx);
      const url = uniqueUrl();
      const created = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url, events: ['run.completed'] },
      });
      const id = created.body.webhook.id;
      const patch = (json: unknown) => call(ctx, 'PATCH', `/admin/webhooks/${id}`, { token, json });
      const switched = await patch({ signatureScheme: 'standard-webhooks' });
      expect(switched.status, switched.text).toBe(200);
      expect(switched.body.webhook).toMatchObject({
        url,
        events: ['run.completed'],
        status: 'active',
        signatureScheme: 'standard-webhooks',
      });
      // A change of events alone keeps the scheme.
      const evented = await patch({ events: ['run.failed'] });
      expect(evented.body.webhook).toMatchObject({
        events: ['run.failed'],
        signatureScheme: 'standard-webhooks',
      });
      const both = await patch({ url: uniqueUrl(), signatureScheme: 'keyhook' });
      expect(both.status, both.text).toBe(200);
      expect(both.body.webhook.signatureScheme).toBe('keyhook');
      const read = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(read.body.webhook).toEqual(both.body.webhook);
    });

    it('an unknown scheme, a wrong type, or a scheme beside a status → 400 validation_failed; nothing changes', async () => {
      const token = await admin(ctx);
      for (const signatureScheme of ['svix', 'Standard-Webhooks', '', 1, null]) {
        const reply = await call(ctx, 'POST', '/admin/webhooks', {
          token,
          json: { url: uniqueUrl(), events: ['run.completed'], signatureScheme },
        });
        expect(reply.status, JSON.stringify(signatureScheme)).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
      }
      const created = await call(ctx, 'POST', '/admin/webhooks', {
        token,
        json: { url: uniqueUrl(), events: ['run.completed'] },
      });
      const id = created.body.webhook.id;
      for (const json of [
        { signatureScheme: 'svix' },
        { signatureScheme: null },
        { status: 'disabled', signatureScheme: 'standard-webhooks' },
      ]) {
        const reply = await call(ctx, 'PATCH', `/admin/webhooks/${id}`, { token, json });
        expect(reply.status, JSON.stringify(json)).toBe(400);
        expect(reply.body.error.code).toBe('validation_failed');
      }
      const after = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
      expect(after.body.webhook).toEqual(created.body.webhook);
    });
    describe('a signing secret the host already has (docs/decisions.md §6.1)', () => {
      const b64 = (bytes: number) => `whsec_${randomBytes(bytes).toString('base64')}`;

      it('create and rotate take one, answer it once, and never show it again', async () => {
        const token = await admin(ctx);
        const given = b64(24);
        const created = await call(ctx, 'POST', '/admin/webhooks', {
          token,
          json: {
            url: uniqueUrl(),
            events: ['run.completed'],
            signatureScheme: 'standard-webhooks',
            secret: given,
          },
        });
        expect(created.status, created.text).toBe(201);
        expect(created.body.secret).toBe(given);
        const id = created.body.webhook.id;
        const read = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
        expect(read.text).not.toContain(given.slice(6));
        const next = b64(64);
        const rotated = await call(ctx, 'POST', `/admin/webhooks/${id}/rotate`, {
          token,
          json: { secret: next },
        });
        expect(rotated.status, rotated.text).toBe(200);
        expect(rotated.body.secret).toBe(next);
        // keyhook's own hex secrets are base64 too: one moves from another keyhook as it is.
        const own = `whsec_${'ab'.repeat(32)}`;
        const moved = await call(ctx, 'POST', `/admin/webhooks/${id}/rotate`, {
          token,
          json: { secret: own },
        });
        expect(moved.body.secret).toBe(own);
      });

      it('too short, too long, without whsec_, not base64, or not a string → 400 naming secret; nothing written', async () => {
        const token = await admin(ctx);
        const count = async () =>
          (await call(ctx, 'GET', '/admin/webhooks?limit=100', { token })).body.data.length;
        const before = await count();
        const created = await call(ctx, 'POST', '/admin/webhooks', {
          token,
          json: { url: uniqueUrl(), events: ['run.completed'] },
        });
        const id = created.body.webhook.id;
        for (const secret of [
          b64(23),
          b64(65),
          randomBytes(32).toString('base64'),
          'whsec_not*base64',
          'whsec_',
          42,
        ]) {
          const create = await call(ctx, 'POST', '/admin/webhooks', {
            token,
            json: { url: uniqueUrl(), events: ['run.completed'], secret },
          });
          const rotate = await call(ctx, 'POST', `/admin/webhooks/${id}/rotate`, { token, json: { secret } });
          for (const reply of [create, rotate]) {
            expect(reply.status, `${JSON.stringify(secret)}: ${reply.text}`).toBe(400);
            expect(reply.body.error.code).toBe('validation_failed');
            expect(reply.body.error.details.map((d: { path: string }) => d.path)).toEqual(['secret']);
          }
        }
        expect(await count()).toBe(before + 1);
        // The refused rotations changed nothing: the secret made at create still signs.
        const read = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
        expect(read.body.webhook.updatedAt).toBe(created.body.webhook.updatedAt);
      });
    });

    describe('an ed25519 key pair (docs/decisions.md §6.10)', () => {
      it('create with keyType ed25519 → 201, secret null, the whpk_ public key in every read; rotate keeps or changes the kind', async () => {
        const token = await admin(ctx);
        const created = await call(ctx, 'POST', '/admin/webhooks', {
          token,
          json: { url: uniqueUrl(), events: ['run.completed'], keyType: 'ed25519' },
        });
        expect(created.status, created.text).toBe(201);
        expect(created.body.secret).toBeNull();
        expect(created.body.webhook).toMatchObject({
          keyType: 'ed25519',
          signatureScheme: 'standard-webhooks',
        });
        expect(created.body.webhook.publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
        const id = created.body.webhook.id;
        const read = await call(ctx, 'GET', `/admin/webhooks/${id}`, { token });
        expect(read.body.webhook).toEqual(created.body.webhook);
        const listed = await call(ctx, 'GET', '/admin/webhooks?limit=100', { token });
        expect(listed.body.data.find((w: { id: string }) => w.id === id)).toEqual(created.body.webhook);
        for (const reply of [created, read, listed]) expect(reply.text).not.toContain('whsk_');

        const rotate = (json: unknown) => call(ctx, 'POST', `/admin/webhooks/${id}/rotate`, { token, json });
        const again = await rotate({ overlapSeconds: 60 });
        expect(again.status, again.text).toBe(200);
        expect(again.body.secret).toBeNull();
        expect(again.body.webhook.keyType).toBe('ed25519');
        expect(again.body.webhook.publicKey).not.toBe(created.body.webhook.publicKey);
        const shared = await rotate({ keyType: 'hmac' });
        expect(shared.body.secret).toMatch(/^whsec_/);
        expect(shared.body.webhook).toMatchObject({ keyType: 'hmac', publicKey: null });
        const back = await rotate({ keyType: 'ed25519' });
        expect(back.body).toMatchObject({ secret: null, webhook: { keyType: 'ed25519' } });
      });

      it('an unknown keyType, ed25519 with a secret or under keyhook’s scheme, and PATCH to keyhook’s scheme → 400 naming the field; nothing written', async () => {
        const token = await admin(ctx);
        const count = async () =>
          (await call(ctx, 'GET', '/admin/webhooks?limit=100', { token })).body.data.length;
        const before = await count();
        const refused: [unknown, string][] = [
          [{ keyType: 'rsa' }, 'keyType'],
          [{ keyType: 'ed25519', secret: `whsec_${randomBytes(32).toString('base64')}` }, 'secret'],
          [{ keyType: 'ed25519', signatureScheme: 'keyhook' }, 'keyType'],
        ];
        for (const [extra, path] of refused) {
          const reply = await call(ctx, 'POST', '/admin/webhooks', {
            token,
            json: { url: uniqueUrl(), events: ['run.completed'], ...(extra as object) },
          });
          expect(reply.status, reply.text).toBe(400);
          expect(reply.body.error.code).toBe('validation_failed');
          expect(reply.body.error.details.map((d: { path: string }) => d.path)).toEqual([path]);
        }
        expect(await count()).toBe(before);

        const pair = await call(ctx, 'POST', '/admin/webhooks', {
          token,
          json: { url: uniqueUrl(), events: ['run.completed'], keyType: 'ed25519' },
        });
        const plain = await call(ctx, 'POST', '/admin/webhooks', {
          token,
          json: { url: uniqueUrl(), events: ['run.completed'], signatureScheme: 'keyhook' },
        });
        const attempts: [string, string, unknown, string][] = [
          [
            'PATCH',
            `/admin/webhooks/${pair.body.webhook.id}`,
            { signatureScheme: 'keyhook' },
            'signatureScheme',
          ],
          ['POST', `/admin/webhooks/${plain.body.webhook.id}/rotate`, { keyType: 'ed25519' }, 'keyType'],
        ];
        for (const [method, path, json, field] of attempts) {
          const reply = await call(ctx, method, path, { token, json });
          expect(reply.status, reply.text).toBe(400);
          expect(reply.body.error.details.map((d: { path: string }) => d.path)).toEqual([field]);
        }
        for (const created of [pair, plain]) {
          const read = await call(ctx, 'GET', `/admin/webhooks/${created.body.webhook.id}`, { token });
          expect(read.body.webhook).toEqual(created.body.webhook);
        }
      });
    });
  });
}
