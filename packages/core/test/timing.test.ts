import { randomBytes } from 'node:crypto';
import { KeyhookError, MemoryStore } from '@keyhook/core';
import { medianTimeRatio, TEST_SCOPES } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { ScopeCatalog } from '../src/catalog/scopes.js';
import { parseApiKey } from '../src/keys/format.js';
import { digestsEqual, hashApiKey } from '../src/keys/hash.js';
import { ApiKeyService } from '../src/keys/key-service.js';
import type { ApiKeyRecord } from '../src/store/types.js';

type Verify = (presented: string) => Promise<unknown>;

/** A verifier without the dummy path: it returns early when the id is unknown. */
function leakyVerify(byLookup: Map<string, ApiKeyRecord>): Verify {
  return async (presented) => {
    const parsed = parseApiKey(presented);
    const record = parsed ? byLookup.get(parsed.keyLookup) : undefined;
    if (!record) throw new KeyhookError('invalid_api_key', 'The API key is not valid.');
    if (!digestsEqual(hashApiKey(presented), record.keyHash)) {
      throw new KeyhookError('invalid_api_key', 'The API key is not valid.');
    }
    return record;
  };
}

describe('verification timing (docs/http-api.md §5.3; docs/decisions.md §3.5 dummy hash)', () => {
  it('costs the same for an unknown key id as for a wrong secret, and the measurement can tell a leak', async () => {
    const store = new MemoryStore();
    const keys = new ApiKeyService({
      scopes: new ScopeCatalog(TEST_SCOPES),
      store,
      clock: { now: () => new Date() },
      randomBytes: (n) => randomBytes(n),
    });
    const { key, secret } = await keys.create('t1', { name: 'timing', scopes: ['items:read'] });
    const wrongSecret = `${secret.slice(0, 25)}${randomBytes(24).toString('hex')}`;
    const unknownId = `sk_live_${randomBytes(8).toString('hex')}_${randomBytes(24).toString('hex')}`;

    const ours = await medianTimeRatio((k) => keys.verify(k), unknownId, wrongSecret);
    const leaky = await medianTimeRatio(leakyVerify(new Map([[key.keyLookup, key]])), unknownId, wrongSecret);
    console.log(
      `unknown-id / wrong-secret time: keyhook ${ours.toFixed(3)}, without dummy hash ${leaky.toFixed(3)}`,
    );

    expect(ours).toBeGreaterThan(0.85);
    expect(ours).toBeLessThan(1.15);
    // The control: the same measurement sees the early return of a verifier without it.
    expect(leaky).toBeLessThan(0.85);
  });
});
