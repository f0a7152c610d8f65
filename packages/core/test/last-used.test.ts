import { createKeyhook, type Logger, MemoryStore } from '@keyhook/core';
import { FakeClock, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';

function setup() {
  const clock = new FakeClock('2026-01-01T00:00:00.000Z');
  const store = new MemoryStore();
  const touches: Date[] = [];
  const touch = store.touchApiKey.bind(store);
  let failNext = false;
  store.touchApiKey = async (id, at, interval) => {
    touches.push(at);
    if (failNext) {
      failNext = false;
      throw new Error('database away');
    }
    return touch(id, at, interval);
  };
  const warnings: string[] = [];
  const logger: Logger = { info() {}, error() {}, warn: (_c, m) => warnings.push(m) };
  const keyhook = createKeyhook({
    ...TEST_CATALOG,
    store,
    clock,
    logger,
    adminSession: { secret: TEST_ADMIN_SECRET },
  });
  return { clock, store, keyhook, touches, warnings, failOnce: () => (failNext = true) };
}

const auth = (secret: string) => ({ authorization: `Bearer ${secret}` });

describe('lastUsedAt (docs/decisions.md §3.10: at most once a minute per key, off the hot path)', () => {
  it('writes once per minute per key however many requests come', async () => {
    const { clock, store, keyhook, touches } = setup();
    const { key, secret } = await keyhook.keys.create('t1', { name: 'x', scopes: ['items:read'] });
    for (let i = 0; i < 50; i++) {
      expect((await keyhook.guard()(auth(secret))).ok).toBe(true);
      clock.advance(1000); // 50 requests over 50 s
    }
    await keyhook.close();
    expect(touches).toHaveLength(1);
    expect((await store.getApiKey('t1', key.id))?.lastUsedAt?.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    clock.advance(10_000); // now 60 s after the first write
    await keyhook.guard()(auth(secret));
    await keyhook.close();
    expect(touches).toHaveLength(2);
  });

  it('does not make the request wait for the write', async () => {
    const { keyhook, touches } = setup();
    const { secret } = await keyhook.keys.create('t1', { name: 'x', scopes: ['items:read'] });
    await keyhook.guard()(auth(secret));
    expect(touches).toHaveLength(0); // not yet started: it runs after the request's turn
    await keyhook.close();
    expect(touches).toHaveLength(1);
  });

  it('a failed write is logged, never fails the request, and is tried again', async () => {
    const { keyhook, touches, warnings, failOnce } = setup();
    const { secret } = await keyhook.keys.create('t1', { name: 'x', scopes: ['items:read'] });
    failOnce();
    expect((await keyhook.guard()(auth(secret))).ok).toBe(true);
    await keyhook.close();
    expect(warnings).toEqual(['could not record lastUsedAt']);
    await keyhook.guard()(auth(secret));
    await keyhook.close();
    expect(touches).toHaveLength(2);
  });

  it('does not record failed verifications', async () => {
    const { keyhook, touches } = setup();
    const { secret } = await keyhook.keys.create('t1', { name: 'x', scopes: ['items:read'] });
    await keyhook.guard()(auth(`${secret.slice(0, -1)}${secret.endsWith('0') ? '1' : '0'}`));
    await keyhook.close();
    expect(touches).toHaveLength(0);
  });
});
