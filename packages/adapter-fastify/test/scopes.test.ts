import { requireScope } from '@keyhook/adapter-fastify';
import { scopedKeyhooks } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';

// The type checks below are the test: `npm run typecheck` fails if a @ts-expect-error line compiles.
describe('requireScope is typed by the keyhook’s own scopes', () => {
  const { invoices, reference } = scopedKeyhooks();

  it('accepts a declared scope, or none', () => {
    expect(typeof requireScope(invoices, 'invoices:write')).toBe('function');
    expect(typeof requireScope(invoices)).toBe('function');
    expect(typeof requireScope(reference, 'runs:read')).toBe('function');
  });

  it('a typo does not compile, and throws at setup for callers without types', () => {
    // @ts-expect-error 'invoices:raed' is not a declared scope
    expect(() => requireScope(invoices, 'invoices:raed')).toThrow(/unknown scope "invoices:raed"/);
    // @ts-expect-error the reference scopes are not this keyhook's
    expect(() => requireScope(invoices, 'runs:read')).toThrow(/unknown scope/);
    // @ts-expect-error nor are this keyhook's scopes the reference server's
    expect(() => requireScope(reference, 'invoices:read')).toThrow(/unknown scope/);
  });
});
