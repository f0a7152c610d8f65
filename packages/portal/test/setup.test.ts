import { describe, expect, it } from 'vitest';
import { type KeyhookPortalOptions, resolvePortalOptions } from '../src/portal-options.js';

const refused = (options: KeyhookPortalOptions, message: RegExp | string) =>
  expect(() => resolvePortalOptions(options)).toThrow(message);

describe('options checked at setup', () => {
  it('refuses an accent colour that is not #rgb or #rrggbb', () => {
    for (const accentColor of ['red', '#12345', '#gggggg', '#fff;color:red', 'rgb(0,0,0)', '#5b5bd6 ', '']) {
      refused({ brand: { name: 'Acme', accentColor } }, /brand\.accentColor must be a hex colour/);
    }
    expect(() => resolvePortalOptions({ brand: { name: 'Acme', accentColor: 'red' } })).toThrow(TypeError);
    expect(resolvePortalOptions({ brand: { name: 'Acme', accentColor: '#5B5BD6' } }).brand.accentColor).toBe(
      '#5b5bd6',
    );
    expect(resolvePortalOptions({ brand: { name: 'Acme', accentColor: '#abc' } }).brand.accentColor).toBe(
      '#abc',
    );
  });

  it('refuses a logo URL that is not https:, http: on localhost, or a path', () => {
    for (const logoUrl of [
      'javascript:alert(1)',
      'data:image/svg+xml,<svg/>',
      'http://acme.example/logo.svg',
      '//evil.example/logo.svg',
      'https://user:pass@acme.example/logo.svg',
      'logo.svg',
      '/logo.svg onerror=x',
      'https://acme.example/\nlogo.svg',
      '/\\evil.example/logo.svg',
    ]) {
      refused({ brand: { name: 'Acme', logoUrl } }, /brand\.logoUrl/);
    }
    const https = resolvePortalOptions({
      brand: { name: 'Acme', logoUrl: 'https://cdn.acme.example/logo.svg' },
    });
    expect(https.brand).toMatchObject({
      logoUrl: 'https://cdn.acme.example/logo.svg',
      logoOrigin: 'https://cdn.acme.example',
    });
    const local = resolvePortalOptions({
      brand: { name: 'Acme', logoUrl: 'http://localhost:3000/logo.png' },
    });
    expect(local.brand.logoOrigin).toBe('http://localhost:3000');
    const own = resolvePortalOptions({ brand: { name: 'Acme', logoUrl: '/static/logo.svg' } });
    expect(own.brand).toMatchObject({ logoUrl: '/static/logo.svg', logoOrigin: null });
  });

  it('refuses a brand without a name, and a theme other than light or dark', () => {
    refused({ brand: { name: '  ' } }, 'brand.name must be a name of 1 to 100 characters');
    refused({ brand: { name: 'x'.repeat(101) } }, 'brand.name must be a name of 1 to 100 characters');
    refused({ brand: { name: 'Acme', theme: 'blue' as 'dark' } }, "brand.theme must be 'light' or 'dark'");
  });

  it("refuses frame ancestors that could end the directive, an empty list, and 'none' beside others", () => {
    for (const source of [
      "'self'; script-src *",
      'https://a.example/path',
      "'unsafe-inline'",
      'https://a.example,b',
      '',
      // Any site at all: a clickjacking page could frame the portal.
      '*',
      'https:',
      'http:',
    ]) {
      refused({ frameAncestors: [source] }, /frameAncestors entries must be/);
    }
    refused({ frameAncestors: [] }, /at least one source/);
    refused({ frameAncestors: ["'none'", "'self'"] }, "'none' stands alone");
    expect(
      resolvePortalOptions({
        frameAncestors: ["'self'", 'https://*.acme.example:8443', 'http://localhost:*'],
      }).frameAncestors,
    ).toEqual(["'self'", 'https://*.acme.example:8443', 'http://localhost:*']);
    expect(resolvePortalOptions({}).frameAncestors).toEqual(["'none'"]);
  });

  it('refuses a path that is not a path', () => {
    for (const path of ['portal', '/por tal', '//portal', '/portal?x=1'])
      refused({ path }, /path must be a path/);
    expect(resolvePortalOptions({ path: '/portal/' }).path).toBe('/portal');
  });
});
