import { createHash } from 'node:crypto';
import { createKeyhook, KeyhookError, MemoryStore, silentLogger } from '@keyhook/core';
import { canonicalJson, type KeyhookRequest } from '@keyhook/core/http';
import { idempotencyRecord } from '@keyhook/store-conformance';
import {
  adminToken,
  FakeClock,
  TEST_ADMIN_SECRET,
  TEST_CATALOG,
  TEST_ENCRYPTION_KEY,
} from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import type { IdempotencyCompletion, WebhookRecord } from '../src/store/types.js';

const clock = new FakeClock('2026-01-01T00:00:00.000Z');

async function createWebhook(
  keyhook: ReturnType<typeof createKeyhook>,
  body: unknown,
  headers = {},
  at: FakeClock = clock,
) {
  const request: KeyhookRequest = {
    method: 'POST',
    path: '/admin/webhooks',
    headers: {
      authorization: `Bearer ${await adminToken({ now: at.now() })}`,
      'content-type': 'application/json',
      ...headers,
    },
    rawBody: Buffer.from(JSON.stringify(body)),
  };
  const response = await keyhook.handle(request);
  return { status: response.status, body: JSON.parse(response.body ?? 'null') };
}

/** Another request's in-progress claim of `key`, made now: locked 60 s, kept 24 h. */
const heldClaim = (key: string, fingerprint: string, claimId: string) =>
  idempotencyRecord({
    key,
    fingerprint,
    claimId,
    createdAt: clock.now(),
    lockedUntil: new Date(clock.now().getTime() + 60_000),
    expiresAt: new Date(clock.now().getTime() + 86_400_000),
  });

const base = { ...TEST_CATALOG, adminSession: { secret: TEST_ADMIN_SECRET }, clock, logger: silentLogger };

describe('webhook modes (docs/decisions.md §5.2)', () => {
  it('development accepts http:// and private addresses such as http://127.0.0.1:…', async () => {
    const keyhook = createKeyhook({ ...base, store: new MemoryStore(), mode: 'development' });
    for (const url of ['http://127.0.0.1:4000/hook', 'http://localhost:3000/x', 'https://10.0.0.8/x']) {
      const reply = await createWebhook(keyhook, { url, events: ['run.completed'] });
      expect(reply.status, url).toBe(201);
    }
    // Userinfo and fragments are refused in every mode.
    expect(
      (await createWebhook(keyhook, { url: 'http://u:p@127.0.0.1/', events: ['run.failed'] })).status,
    ).toBe(400);
  });

  it('production refuses the same URLs, and refuses to start without an encryption key', async () => {
    const keyhook = createKeyhook({
      ...base,
      store: new MemoryStore(),
      mode: 'production',
      encryptionKey: TEST_ENCRYPTION_KEY,
    });
    for (const url of ['http://127.0.0.1:4000/hook', 'https://localhost/x', 'https://10.0.0.8/x']) {
      expect((await createWebhook(keyhook, { url, events: ['run.completed'] })).status, url).toBe(400);
    }
    expect(() => createKeyhook({ ...base, store: new MemoryStore(), mode: 'production' })).toThrow(
      /encryptionKey is required in production/,
    );
  });

  it('without a mode, NODE_ENV decides in any letter case: Production needs an encryption key', () => {
    const before = process.env['NODE_ENV'];
    try {
      for (const value of ['production', 'Production', ' PRODUCTION ']) {
        process.env['NODE_ENV'] = value;
        expect(() => createKeyhook({ ...base, store: new MemoryStore() }), value).toThrow(
          /encryptionKey is required in production/,
        );
      }
      process.env['NODE_ENV'] = 'development';
      expect(() => createKeyhook({ ...base, store: new MemoryStore() })).not.toThrow();
    } finally {
      process.env['NODE_ENV'] = before;
    }
  });

  it('the policy can be set explicitly: private addresses allowed in production for a private network', async () => {
    const keyhook = createKeyhook({
      ...base,
      store: new MemoryStore(),
      mode: 'production',
      encryptionKey: TEST_ENCRYPTION_KEY,
      webhookUrlPolicy: { allowPrivateAddresses: true },
    });
    expect(
      (await createWebhook(keyhook, { url: 'https://10.0.0.8/x', events: ['run.completed'] })).status,
    ).toBe(201);
    expect(
      (await createWebhook(keyhook, { url: 'http://10.0.0.9/x', events: ['run.completed'] })).status,
    ).toBe(400);
  });

  it('a claim whose request died is freed after 60 s', async () => {
    const store = new MemoryStore();
    const keyhook = createKeyhook({ ...base, store, mode: 'development' });
    const body = { url: 'https://hooks.example.com/died', events: ['run.completed'] };
    // A request that claimed the key and never finished: its process died before completing.
    const fingerprint = createHash('sha256')
      .update(`POST /admin/webhooks\n${canonicalJson(body)}`)
      .digest('hex');
    await store.claimIdempotencyKey(heldClaim('died', fingerprint, 'dead-claim'), clock.now());
    clock.advance(59_999);
    const early = await createWebhook(keyhook, body, { 'idempotency-key': 'died' });
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('idempotency_in_progress');
    clock.advance(1);
    const late = await createWebhook(keyhook, body, { 'idempotency-key': 'died' });
    expect(late.status).toBe(201);
  });

  it('a 5xx is not stored: the key is freed, and the retry runs again', async () => {
    class FlakyStore extends MemoryStore {
      failures = 1;
      override async insertWebhook(record: WebhookRecord, completion?: IdempotencyCompletion) {
        if (this.failures-- > 0) throw new KeyhookError('unavailable', 'database down', { retryAfter: 1 });
        return super.insertWebhook(record, completion);
      }
    }
    const keyhook = createKeyhook({ ...base, store: new FlakyStore(), mode: 'development' });
    const body = { url: 'https://hooks.example.com/flaky', events: ['run.completed'] };
    const first = await createWebhook(keyhook, body, { 'idempotency-key': 'flaky' });
    expect(first.status).toBe(503);
    const retry = await createWebhook(keyhook, body, { 'idempotency-key': 'flaky' });
    expect(retry.status).toBe(201);
  });

  it('expired records are purged from the store, at most once an hour, when keys are used', async () => {
    const store = new MemoryStore();
    const purgeClock = new FakeClock('2026-06-01T00:00:00.000Z');
    const keyhook = createKeyhook({
      ...base,
      clock: purgeClock,
      store,
      mode: 'development',
      idempotencyRetentionMs: 2 * 60 * 60 * 1000,
    });
    const started = purgeClock.now();
    const send = (key: string, path: string) =>
      createWebhook(
        keyhook,
        { url: `https://hooks.example.com/${path}`, events: ['run.failed'] },
        { 'idempotency-key': key },
        purgeClock,
      );
    expect((await send('old', 'a')).status).toBe(201);
    // Still held, as seen from the moment it was made: a claim then finds it.
    const probe = async () =>
      (
        await store.claimIdempotencyKey(
          idempotencyRecord({
            key: 'old',
            fingerprint: 'probe',
            claimId: `probe-${Math.random()}`,
            createdAt: started,
            lockedUntil: started,
            expiresAt: new Date(started.getTime() + 1),
          }),
          started,
        )
      ).outcome;
    purgeClock.advance(2 * 60 * 60 * 1000); // the record has expired, but nothing has purged it yet
    expect(await probe()).toBe('exists');
    expect((await send('new', 'b')).status).toBe(201); // first use in over an hour: purges
    await new Promise((resolve) => setImmediate(resolve));
    expect(await probe()).toBe('claimed'); // gone from the store
  });

  it('a create whose claim ran out and was taken over answers 409 idempotency_in_progress and writes nothing', async () => {
    class SlowStore extends MemoryStore {
      override async insertWebhook(record: WebhookRecord, completion?: IdempotencyCompletion) {
        // While this request stalled past its 60 s lock, a retry took the key over.
        clock.advance(60_000);
        await this.claimIdempotencyKey(heldClaim('stalled', 'retry', 'the-retry'), clock.now());
        return super.insertWebhook(record, completion);
      }
    }
    const store = new SlowStore();
    const keyhook = createKeyhook({ ...base, store, mode: 'development' });
    const body = { url: 'https://hooks.example.com/stalled', events: ['run.completed'] };
    const reply = await createWebhook(keyhook, body, { 'idempotency-key': 'stalled' });
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('idempotency_in_progress');
    expect(await store.listWebhooks('tenant_a', { limit: 10 })).toEqual([]);
  });
});
