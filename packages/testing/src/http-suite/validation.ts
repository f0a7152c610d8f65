import { describe, expect, it } from 'vitest';
import { admin, call } from './client.js';
import type { SuiteContext } from './suite-context.js';

const VALID = { name: 'worker', scopes: ['items:read'] };

/** docs/decisions.md §3.11: each case, and the field its details must name. */
const INVALID_CREATES: [string, unknown, string][] = [
  ['expiresAt in the past', { ...VALID, expiresAt: '2025-12-31T23:59:59.999Z' }, 'expiresAt'],
  ['expiresAt equal to now', { ...VALID, expiresAt: '2026-01-01T00:00:00.000Z' }, 'expiresAt'],
  ['expiresAt unparsable', { ...VALID, expiresAt: 'next tuesday' }, 'expiresAt'],
  ['expiresAt not a string', { ...VALID, expiresAt: 1767225600000 }, 'expiresAt'],
  ['name missing', { scopes: ['items:read'] }, 'name'],
  ['name empty', { ...VALID, name: '' }, 'name'],
  ['name blank', { ...VALID, name: '   ' }, 'name'],
  ['name over 200 characters', { ...VALID, name: 'n'.repeat(201) }, 'name'],
  // Names that render other than they are (docs/decisions.md §1.5).
  ['name with a right-to-left override', { ...VALID, name: 'invoices\u202Egpj.exe' }, 'name'],
  ['name with a bidirectional isolate', { ...VALID, name: 'a\u2067b\u2069' }, 'name'],
  ['name with a C0 control', { ...VALID, name: 'ring\u0007bell' }, 'name'],
  ['name with an escape sequence', { ...VALID, name: '\u001b[2Jgone' }, 'name'],
  ['name with DEL', { ...VALID, name: 'back\u007fspace' }, 'name'],
  ['scopes missing', { name: 'worker' }, 'scopes'],
  ['scopes empty', { ...VALID, scopes: [] }, 'scopes'],
  ['scopes unknown', { ...VALID, scopes: ['items:read', 'admin:all'] }, 'scopes'],
  ['scopes duplicated', { ...VALID, scopes: ['items:read', 'items:read'] }, 'scopes'],
  ['scopes not an array', { ...VALID, scopes: 'items:read' }, 'scopes'],
];

export function validationCases(ctx: SuiteContext): void {
  describe('validation at create (docs/decisions.md §3.11) → 400 validation_failed with details', () => {
    it.each(INVALID_CREATES)('%s', async (_label, json, field) => {
      const reply = await call(ctx, 'POST', '/admin/keys', { token: await admin(ctx), json });
      expect(reply.status, reply.text).toBe(400);
      expect(reply.body.error.code).toBe('validation_failed');
      const details: { path: string; message: string }[] = reply.body.error.details;
      expect(details.length).toBeGreaterThan(0);
      for (const detail of details) {
        expect(typeof detail.path).toBe('string');
        expect(typeof detail.message).toBe('string');
      }
      expect(details.some((d) => d.path === field || d.path.startsWith(`${field}.`))).toBe(true);
      const list = await call(ctx, 'GET', '/admin/keys', { token: await admin(ctx) });
      expect(list.body.data).toEqual([]);
    });

    it('an unknown field → 400 validation_failed whose details name it', async () => {
      const reply = await call(ctx, 'POST', '/admin/keys', {
        token: await admin(ctx),
        json: { ...VALID, tenantId: 'tenant_b' },
      });
      expect(reply.status).toBe(400);
      expect(reply.body.error.code).toBe('validation_failed');
      const details: { path: string; message: string }[] = reply.body.error.details;
      expect(details.some((d) => `${d.path} ${d.message}`.includes('tenantId'))).toBe(true);
    });

    it('a name at the limits and an expiresAt with an offset are accepted', async () => {
      const reply = await call(ctx, 'POST', '/admin/keys', {
        token: await admin(ctx),
        json: { ...VALID, name: 'n'.repeat(200), expiresAt: '2026-01-01T00:00:00.001Z' },
      });
      expect(reply.status, reply.text).toBe(201);
      // Tab, newline and right-to-left text itself (Arabic, Hebrew) are names like any other.
      const readable = await call(ctx, 'POST', '/admin/keys', {
        token: await admin(ctx),
        json: { ...VALID, name: 'مفتاح\tkey\nשני' },
      });
      expect(readable.status, readable.text).toBe(201);
    });
  });
}
