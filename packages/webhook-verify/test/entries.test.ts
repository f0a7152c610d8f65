import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as root from '@keyhook/webhook-verify';
import * as web from '@keyhook/webhook-verify/web';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const SPECIFIER = /\bfrom\s+'([^']+)'|\bimport\s*\(\s*'([^']+)'\s*\)|\bimport\s+'([^']+)'/g;

/** Every non-relative module that the source reachable from one entry imports. */
function externalImports(entry: string): Set<string> {
  const external = new Set<string>();
  const seen = new Set<string>();
  const pending = [new URL(`../src/${entry}`, import.meta.url)];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file.href)) continue;
    seen.add(file.href);
    for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
      const specifier = match[1] ?? match[2] ?? match[3] ?? '';
      if (specifier.startsWith('.')) pending.push(new URL(specifier.replace(/\.js$/, '.ts'), file));
      else external.add(specifier);
    }
  }
  return external;
}

describe('entries', () => {
  it('./web reaches no node: module and no package, so Workers and browser bundles stay clean', () => {
    expect([...externalImports('web.ts')]).toEqual([]);
  });

  it('. reaches node:crypto, and only that (which also shows the check above can fail)', () => {
    expect([...externalImports('index.ts')]).toEqual(['node:crypto']);
  });

  // esbuild (hoisted for vite and tsup) bundles as a Workers or browser build would.
  it('./web bundles for the browser platform; . does not, for want of node:crypto', async () => {
    const bundle = (entry: string) =>
      build({
        entryPoints: [fileURLToPath(new URL(`../src/${entry}`, import.meta.url))],
        bundle: true,
        platform: 'browser',
        format: 'esm',
        write: false,
        logLevel: 'silent',
      });
    const { outputFiles } = await bundle('web.ts');
    expect(outputFiles[0]?.text).toContain('crypto.subtle');
    await expect(bundle('index.ts')).rejects.toThrow(/node:crypto/);
  });

  it('./web exports everything . does except the node:crypto verify, verifySignature, sign and signEvent', () => {
    const nodeOnly = ['verify', 'verifySignature', 'sign', 'signEvent'];
    expect(Object.keys(web).sort()).toEqual(
      Object.keys(root)
        .filter((name) => !nodeOnly.includes(name))
        .sort(),
    );
    for (const fn of [root.verify, root.verifySignature, root.sign, root.signEvent]) {
      expect(typeof fn).toBe('function');
    }
  });
});

describe('README', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const recipeIn = (name: string, file: string) => {
    const source = readFileSync(new URL(`./${file}.test.ts`, import.meta.url), 'utf8');
    return new RegExp(`// recipe:${name}\\n([\\s\\S]*?)// recipe:end\\n`).exec(source)?.[1];
  };

  it.each([
    ['express', 'express'],
    ['test', 'express'],
    ['web', 'request'],
    ['typed', 'types'],
  ])('shows the %s recipe exactly as test/%s.test.ts runs it', (name, file) => {
    const recipe = recipeIn(name, file);
    expect(recipe).toBeDefined();
    expect(readme).toContain(recipe);
  });

  it.each([
    ['fastify', 'fastify'],
    ['hono', 'hono'],
    ['koa', 'koa'],
    ['next-pages', 'next-pages'],
    ['nest', 'nest'],
  ])('points at the %s recipe in test/%s.test.ts, which holds it', (name, file) => {
    expect(recipeIn(name, file)).toBeDefined();
    expect(readme).toContain(`[test/${file}.test.ts](`);
  });

  it('lists every error code', async () => {
    for (const code of root.VERIFICATION_ERROR_CODES) expect(readme).toContain(`\`${code}\``);
  });

  it('shows a delivery that verifies with the secret it names, under the default header names', () => {
    const [, head = '', body = ''] = /```http\n[^\n]*\n([\s\S]*?)\n\n([^\n]*)\n```/.exec(readme) ?? [];
    const headers = Object.fromEntries(
      head.split('\n').map((line) => line.split(': ') as [string, string]),
    ) as Record<string, string>;
    const secret = /Signed with `(whsec_[0-9a-f]{64})`/.exec(readme)?.[1] ?? '';
    const t = Number(/t=(\d+)/.exec(headers[root.SIGNATURE_HEADER] ?? '')?.[1]);
    expect(root.verify(body, headers, secret, { now: t * 1000 })).toEqual(JSON.parse(body));
  });
});
