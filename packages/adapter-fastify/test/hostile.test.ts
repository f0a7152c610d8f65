import { requireScope } from '@keyhook/adapter-fastify';
import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { TEST_ADMIN_SECRET, TEST_CATALOG } from '@keyhook/testing/support';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';

/**
 * Refusals before the body run in the one HTTP suite (`@keyhook/testing/http-suite`,
 * refusals.ts) against both adapters; this is the Fastify-only part: a guard registered where
 * the body was already read says so.
 */
describe('Fastify: requireScope registered too late', () => {
  it('as a preHandler (after the body is read) it still guards, and warns once that it should be onRequest', async () => {
    const keyhook = createKeyhook({
      ...TEST_CATALOG,
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      logger: silentLogger,
    });
    const late = Fastify();
    late.post('/late', { preHandler: requireScope(keyhook, 'items:write') }, async () => ({ ok: true }));
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 2; i++) {
        const reply = await late.inject({ method: 'POST', url: '/late', payload: { a: 1 } });
        expect(reply.statusCode).toBe(401);
      }
      await new Promise((resolve) => setImmediate(resolve));
      const ours = warnings.filter((w) => (w as { code?: string }).code === 'KEYHOOK_GUARD_AFTER_BODY');
      expect(ours).toHaveLength(1);
      expect(ours[0]!.message).toMatch(/onRequest/);
    } finally {
      process.off('warning', onWarning);
      await late.close();
    }
  });
});
