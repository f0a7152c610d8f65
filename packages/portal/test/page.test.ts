import type { KeyhookRequest } from '@keyhook/core/http';
import { describe, expect, it } from 'vitest';
import { CONFIG_ELEMENT_ID, type PortalPageConfig } from '../src/page-config.js';
import { portalPages } from '../src/portal-pages.js';

const get = (path: string, basePath: string | undefined = '/api/v1/portal'): KeyhookRequest => ({
  method: 'GET',
  path,
  headers: {},
  rawBody: null,
  basePath,
});

function configOf(html: string): PortalPageConfig {
  const match = new RegExp(`<script type="application/json" id="${CONFIG_ELEMENT_ID}">([^<]*)</script>`).exec(
    html,
  );
  expect(match).not.toBeNull();
  return JSON.parse(match![1]!) as PortalPageConfig;
}

describe('the page', () => {
  it("answers GET / with the strict CSP, no-store, no-referrer and X-Frame-Options when frameAncestors is 'none'", () => {
    const page = portalPages().handle(get('/'));
    expect(page.status).toBe(200);
    expect(page.headers).toEqual({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy':
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
    });
  });

  it("names the logo's origin in img-src and the configured frame ancestors, without X-Frame-Options", () => {
    const pages = portalPages({
      brand: { name: 'Acme', logoUrl: 'https://cdn.acme.example/brand/logo.svg' },
      frameAncestors: ["'self'", 'https://dashboard.acme.example'],
    });
    const page = pages.handle(get('/'));
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https://cdn.acme.example; " +
        "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; " +
        "frame-ancestors 'self' https://dashboard.acme.example",
    );
    expect(page.headers['x-frame-options']).toBeUndefined();
  });

  it('holds no inline script, no inline style and no event handler attribute', () => {
    const html = portalPages({ brand: { name: 'Acme', accentColor: '#5b5bd6', theme: 'dark' } }).handle(
      get('/'),
    ).body!;
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts).toHaveLength(2);
    for (const [, attributes, content] of scripts) {
      // Either an external module, empty, or JSON data, which CSP does not run.
      if (/\ssrc="/.test(attributes!)) expect(content).toBe('');
      else expect(attributes).toContain('type="application/json"');
    }
    expect(html).not.toMatch(/<style\b/i);
    expect(html).not.toMatch(/\sstyle=/i);
    expect(html).not.toMatch(/\son[a-z]+=/i);
    // The accent reaches the app as data, and the theme as an attribute.
    expect(configOf(html).brand.accentColor).toBe('#5b5bd6');
    expect(html).toContain('<html lang="en" data-theme="dark">');
  });

  it('escapes the brand name in the title and the meta tag, and keeps it exact in the config', () => {
    const name = '</title><script>alert("x")</script> & Co\'s';
    const html = portalPages({ brand: { name } }).handle(get('/')).body!;
    expect(html).not.toContain('<script>alert');
    expect(html).toContain(
      '<title>&lt;/title&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co&#39;s</title>',
    );
    expect(html).toContain(
      '<meta name="application-name" content="&lt;/title&gt;&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co&#39;s">',
    );
    expect(configOf(html).brand.name).toBe(name);
  });

  it('links the assets and hands the app the base path the client used, without a trailing slash', () => {
    const html = portalPages().handle(get('/', '/customers/portal/')).body!;
    expect(html).toMatch(/<link rel="stylesheet" href="\/customers\/portal\/assets\/app-[A-Z0-9]+\.css">/);
    expect(html).toMatch(
      /<script type="module" src="\/customers\/portal\/assets\/app-[A-Z0-9]+\.js"><\/script>/,
    );
    expect(configOf(html)).toEqual({
      basePath: '/customers/portal',
      brand: { name: null, logoUrl: null, accentColor: null },
    });
  });

  it('escapes a base path that could break out of an attribute or the config block', () => {
    const html = portalPages().handle(get('/', '/p"><script>x</script>')).body!;
    expect(html).not.toContain('<script>x');
    expect(html).toContain('href="/p&quot;&gt;&lt;script&gt;x&lt;/script&gt;/assets/');
    expect(configOf(html).basePath).toBe('/p"><script>x</script>');
  });

  it('falls back to where the adapters mount it when the adapter gives no base path', () => {
    const { basePath: _, ...request } = get('/');
    expect(configOf(portalPages({ path: '/customer-portal' }).handle(request).body!).basePath).toBe(
      '/customer-portal',
    );
    expect(configOf(portalPages().handle(request).body!).basePath).toBe('/api/v1/portal');
  });

  it('answers another method or an unknown page with the 404 envelope', () => {
    const pages = portalPages();
    for (const request of [{ ...get('/'), method: 'POST' }, get('/settings')]) {
      const answer = pages.handle(request);
      expect(answer.status).toBe(404);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(answer.body!)).toEqual({
        error: { code: 'not_found', message: 'There is no such page.' },
      });
    }
  });
});
