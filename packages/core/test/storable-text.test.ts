import { createKeyhook, isKeyhookError, MemoryStore, silentLogger } from '@keyhook/core';
import { storableText } from '@keyhook/core/http';
import { adminToken, TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isStorableText } from '../src/validation.js';

describe('text every store keeps as it came (storableText)', () => {
  it('refuses U+0000 and unpaired surrogates anywhere, and nothing else', () => {
    for (const text of ['', 'abc', 'naïve ✓', '😀', 'a😀b', '\u0001\u001f\u007f', '\ufffd', '\uffff'])
      expect(isStorableText(text), JSON.stringify(text)).toBe(true);
    for (const text of ['\u0000', 'a\u0000', 'a\ud800', '\ud800b', 'a\udc00b', '\udc00\ud800', '😀\ud83d'])
      expect(isStorableText(text), JSON.stringify(text)).toBe(false);
    const schema = storableText().trim().max(5);
    expect(schema.safeParse(' ab ').data).toBe('ab');
    expect(schema.safeParse('a\u0000').error?.issues[0]?.message).toBe(
      'must not contain U+0000 or an unpaired surrogate',
    );
  });

  it('adds the rule to a string schema of the host’s own, after its other checks', () => {
    const url = storableText(z.url().max(40));
    expect(url.parse('https://a.example/x')).toBe('https://a.example/x');
    const refused = url.safeParse('https://a.example/a\u0000b');
    expect(refused.error?.issues.map((issue) => issue.message)).toEqual([
      'must not contain U+0000 or an unpaired surrogate',
    ]);
    expect(url.safeParse('not a url').error?.issues[0]?.code).toBe('invalid_format');
  });

  it("refuses such a key name and a published event's tenant with validation_failed, and such an admin tenant, before the store", async () => {
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      logger: silentLogger,
      adminSession: { secret: TEST_ADMIN_SECRET },
    });
    const refused = async (work: () => Promise<unknown>) => {
      const error = await work().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isKeyhookError(error) && error.code).toBe('validation_failed');
      return error as { details?: { path: string }[] };
    };
    const key = await refused(() =>
      keyhook.keys.create('tenant_a', { name: 'a\u0000b', scopes: ['items:read'] }),
    );
    expect(key.details?.[0]?.path).toBe('name');
    const event = await refused(() =>
      keyhook.events.publish({ tenantId: 'tenant\ud800', type: 'run.completed', data: { runId: 'r' } }),
    );
    expect(event.details?.[0]?.path).toBe('tenantId');
    // An admin session's tenant is stored with all it creates: one no store keeps is refused.
    for (const tenantId of ['tenant\u0000a', 'tenant\udc00']) {
      const response = await keyhook.handle({
        method: 'GET',
        path: '/admin/keys',
        headers: { authorization: `Bearer ${await adminToken({ tenantId })}` },
        rawBody: null,
      });
      expect(response.status).toBe(401);
      expect(JSON.parse(response.body!).error.code).toBe('invalid_admin_session');
    }
    await keyhook.close();
  });
});
