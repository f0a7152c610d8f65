// What each step of the API-key guard costs, measured in this process, one step at a time:
//
//   npx vite-node benchmarks/guard-steps.mjs    (after a build: the stores run from dist)
//
// The steps are the ones keyhook.guard(scope)'s check runs for a valid key (core's
// http/handler.ts verifyApiKey → keys/key-service.ts verify), timed on their own, then the whole
// call, on the SQLite store and on the memory store. Figures are µs per call, best of 5 runs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKeyhook, generateEncryptionKey, MemoryStore, silentLogger } from '@keyhook/core';
import { newId, rateLimitHeaders } from '@keyhook/core/http';
import { createSqliteStore } from '@keyhook/store-sqlite';
// The guard's inner steps are not public: they are read from core's sources, which is why this
// script runs under vite-node.
import { cryptoRandomBytes, systemClock } from '../packages/core/src/clock.ts';
import { bearerToken } from '../packages/core/src/http/headers.ts';
import { parseApiKey } from '../packages/core/src/keys/format.ts';
import { digestsEqual, hashApiKey } from '../packages/core/src/keys/hash.ts';

const ITERATIONS = Number(process.env.STEPS_ITERATIONS ?? 100_000);

async function time(label, fn) {
  const best = [];
  for (let run = 0; run < 5; run++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i++) {
      const result = fn();
      if (result instanceof Promise) await result;
    }
    best.push(Number(process.hrtime.bigint() - start) / ITERATIONS / 1000);
  }
  const micros = Math.min(...best);
  console.log(`${micros.toFixed(2).padStart(7)} µs  ${label}`);
  return micros;
}

const dir = mkdtempSync(path.join(tmpdir(), 'keyhook-steps-'));
const stores = {
  sqlite: createSqliteStore({ filename: path.join(dir, 'keyhook.db') }),
  memory: new MemoryStore(),
};

for (const [name, store] of Object.entries(stores)) {
  const keyhook = createKeyhook({
    scopes: ['sources:read', 'items:read'],
    store,
    adminSession: { secret: 'benchmark-admin-secret-0123456789abcdef' },
    encryptionKey: generateEncryptionKey(),
    logger: silentLogger,
  });
  // Other keys in the table, so the lookup is an index search, not a one-row scan.
  for (let i = 0; i < 1000; i++)
    await keyhook.keys.create('other', { name: `k${i}`, scopes: ['items:read'] });
  const { key, secret } = await keyhook.keys.create('bench', { name: 'bench', scopes: ['sources:read'] });
  const headers = { host: '127.0.0.1', authorization: `Bearer ${secret}`, 'user-agent': 'autocannon' };
  // A limit no run reaches: every call is counted.
  const limited = await keyhook.keys.create('bench', {
    name: 'bench limited',
    scopes: ['sources:read'],
    rateLimit: { limit: 1_000_000_000, window: 60 },
  });
  const limitedHeaders = { ...headers, authorization: `Bearer ${limited.secret}` };
  const lookup = key.keyLookup;
  const canRead = keyhook.guard('sources:read');

  console.log(`\n${name} store`);
  if (name === 'sqlite') {
    await time('bearerToken(headers)  — header lookup (regex only for unusual spellings)', () =>
      bearerToken(headers),
    );
    await time('hashApiKey(secret)    — SHA-256 of the presented key', () => hashApiKey(secret));
    await time('parseApiKey(secret)   — the anchored key regex', () => parseApiKey(secret));
    await time('digestsEqual(a, b)    — 2 Buffer.from(hex) + timingSafeEqual', () =>
      digestsEqual(key.keyHash, key.keyHash),
    );
    await time("newId('key')          — a resource id: 10 random bytes + base32", () =>
      newId('key', systemClock, cryptoRandomBytes),
    );
    await time("cryptoRandomBytes(16) — of which: core's CSPRNG draw", () => cryptoRandomBytes(16));
  }
  await time(`store.findApiKeyByCredential  — ${name} read of one key (a cache miss)`, () =>
    store.findApiKeyByCredential(lookup, key.keyHash),
  );
  await time('store.keyChangeVersion()      — what a cache hit asks the store', () =>
    store.keyChangeVersion(),
  );
  await time('keyhook.keys.verify(secret)  — a cached key: hash, version, cache lookup', () =>
    keyhook.keys.verify(secret),
  );
  await time('keyhook.guard(scope)(headers)  — the whole guard, as the adapters call it', () =>
    canRead(headers),
  );
  await time('keyhook.guard(scope)(headers)  — a rate-limited key: the guard and its count', () =>
    canRead(limitedHeaders),
  );
  const state = canRead(limitedHeaders).rateLimit;
  await time('rateLimitHeaders(state)        — the four RateLimit fields an adapter sends', () =>
    rateLimitHeaders(state),
  );
  await keyhook.close();
  await store.close();
}
rmSync(dir, { recursive: true, force: true });
