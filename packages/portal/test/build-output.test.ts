import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { defaultAssetsDir } from '../src/built-assets.js';

// scripts/build-app.mjs's budget: the first page's JS and CSS, gzipped.
const BUDGET_GZIP_BYTES = 100_000;
const dir = defaultAssetsDir();
const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as {
  entry: { script: string; style: string };
  files: string[];
  firstPage: { rawBytes: number; gzipBytes: number; budgetGzipBytes: number };
};
const read = (name: string) => readFileSync(path.join(dir, name));

describe('the built app', () => {
  it("keeps the first page's script and stylesheet within 100 KB gzipped, as the manifest says", () => {
    const files = [read(manifest.entry.script), read(manifest.entry.style)];
    const raw = files.reduce((sum, file) => sum + file.byteLength, 0);
    const gzip = files.reduce((sum, file) => sum + gzipSync(file, { level: 9 }).byteLength, 0);
    expect(manifest.firstPage).toEqual({
      rawBytes: raw,
      gzipBytes: gzip,
      budgetGzipBytes: BUDGET_GZIP_BYTES,
    });
    expect(gzip).toBeLessThanOrEqual(BUDGET_GZIP_BYTES);
  });

  it('holds no eval, no Function constructor and no address outside the page (no CDN, no web font)', () => {
    const script = read(manifest.entry.script).toString('utf8');
    const style = read(manifest.entry.style).toString('utf8');
    // Matches are compared, not the files: a failure prints what was found, not a 50 KB bundle.
    expect(script.match(/\beval\(|new Function\(/g)).toBeNull();
    expect(style.match(/@import|@font-face|url\(\s*['"]?(?:https?:)?\/\/[^)]*\)/g)).toBeNull();
    // The XML namespaces Preact names, and the URL field's placeholder, are not fetched.
    const addresses = (script.match(/https?:\/\/[\w.-]+[^\s'"`]*/g) ?? []).filter(
      (address) => !/^http:\/\/www\.w3\.org\/|^https:\/\/example\.com\//.test(address),
    );
    expect(addresses).toEqual([]);
  });
});
