import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { KeyhookRequest } from '@keyhook/core/http';
import { describe, expect, it } from 'vitest';
import { type AssetManifest, defaultAssetsDir, loadBuiltAssets } from '../src/built-assets.js';
import { portalPages } from '../src/portal-pages.js';

const dir = defaultAssetsDir();
const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as AssetManifest;
const get = (requestPath: string): KeyhookRequest => ({
  method: 'GET',
  path: requestPath,
  headers: {},
  rawBody: null,
});

describe('the assets', () => {
  it('serves every built file with its type, a year of immutable caching and nosniff, byte for byte', () => {
    const pages = portalPages();
    expect(manifest.files.length).toBeGreaterThanOrEqual(2);
    for (const name of manifest.files) {
      const answer = pages.handle(get(`/assets/${name}`));
      expect(answer.status).toBe(200);
      expect(answer.headers).toEqual({
        'content-type': name.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8',
        'cache-control': 'public, max-age=31536000, immutable',
        'x-content-type-options': 'nosniff',
      });
      expect(answer.body).toBe(readFileSync(path.join(dir, name), 'utf8'));
    }
  });

  it('names each file by a hash of its content', () => {
    for (const name of manifest.files) expect(name).toMatch(/^app-[A-Z0-9]{8}\.(?:js|css)$/);
    expect(manifest.files).toContain(manifest.entry.script);
    expect(manifest.files).toContain(manifest.entry.style);
  });

  it('answers an unknown asset, and a path that climbs out of assets/, with the 404 envelope', () => {
    const pages = portalPages();
    const missing = pages.handle(get('/assets/app-00000000.js'));
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(missing.body!)).toEqual({
      error: { code: 'not_found', message: 'There is no such asset.' },
    });
    for (const climb of [
      '/assets/../manifest.json',
      '/assets/manifest.json',
      '/assets/%2e%2e%2fpackage.json',
    ]) {
      expect(pages.handle(get(climb)).status).toBe(404);
    }
  });

  it('refuses to start without a build, or with a manifest naming a path', () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'keyhook-portal-'));
    try {
      expect(() => loadBuiltAssets(empty)).toThrow(/built assets are missing .*npm run build/);
      writeFileSync(
        path.join(empty, 'manifest.json'),
        JSON.stringify({ entry: { script: '../secret.js', style: 'a.css' }, files: ['../secret.js'] }),
      );
      expect(() => loadBuiltAssets(empty)).toThrow('the asset manifest names "../secret.js"');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
