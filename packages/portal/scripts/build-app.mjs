#!/usr/bin/env node
// Builds the portal's browser app (app/) into dist/assets: content-hashed JS and CSS, and
// manifest.json, which the server reads at startup (src/built-assets.ts). Prints the first page's
// size and fails when it is over budget. Run by `npm run build`, after tsup (whose clean would
// remove dist/assets).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outdir = path.join(root, 'dist', 'assets');
/** The first page's JS and CSS, gzipped, at most: 100 KB. */
const BUDGET_GZIP_BYTES = 100_000;

const result = await build({
  entryPoints: { app: path.join(root, 'app', 'main.tsx') },
  tsconfig: path.join(root, 'app', 'tsconfig.json'),
  bundle: true,
  minify: true,
  format: 'esm',
  // Browsers with <dialog>, ES2020 and CSS custom properties.
  target: ['es2020', 'chrome100', 'edge100', 'firefox100', 'safari15.4'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  define: { 'process.env.NODE_ENV': '"production"' },
  entryNames: '[name]-[hash]',
  outdir,
  charset: 'utf8',
  metafile: true,
  write: false,
  logLevel: 'warning',
});

const outputOf = (file) => path.relative(root, file).split(path.sep).join('/');
const [scriptPath, meta] = Object.entries(result.metafile.outputs).find(([, output]) => output.entryPoint);
if (!meta.cssBundle) throw new Error('build-app: the app imports no stylesheet');
const entry = { script: path.basename(scriptPath), style: path.basename(meta.cssBundle) };
const files = result.outputFiles.map((file) => ({ name: path.basename(file.path), contents: file.contents }));
if (files.some((file) => outputOf(path.join(outdir, file.name)) !== `dist/assets/${file.name}`)) {
  throw new Error('build-app: an output landed outside dist/assets');
}

const sizeOf = (name) => {
  const contents = files.find((file) => file.name === name).contents;
  return { raw: contents.byteLength, gzip: gzipSync(contents, { level: 9 }).byteLength };
};
const kb = (bytes) => `${(bytes / 1000).toFixed(1)} KB`;
const script = sizeOf(entry.script);
const style = sizeOf(entry.style);
const total = { raw: script.raw + style.raw, gzip: script.gzip + style.gzip };

console.log(`@keyhook/portal app: ${entry.script} ${kb(script.raw)} (${kb(script.gzip)} gzipped)`);
console.log(`@keyhook/portal app: ${entry.style} ${kb(style.raw)} (${kb(style.gzip)} gzipped)`);
console.log(
  `@keyhook/portal app: first page ${kb(total.raw)}, ${kb(total.gzip)} gzipped, of a ${kb(BUDGET_GZIP_BYTES)} gzipped budget`,
);
if (total.gzip > BUDGET_GZIP_BYTES) {
  console.error(
    `build-app: the first page is ${kb(total.gzip)} gzipped, over the ${kb(BUDGET_GZIP_BYTES)} budget`,
  );
  process.exit(1);
}

rmSync(outdir, { recursive: true, force: true });
mkdirSync(outdir, { recursive: true });
for (const file of files) writeFileSync(path.join(outdir, file.name), file.contents);
const manifest = {
  entry,
  files: files.map((file) => file.name).sort(),
  firstPage: { rawBytes: total.raw, gzipBytes: total.gzip, budgetGzipBytes: BUDGET_GZIP_BYTES },
};
writeFileSync(path.join(outdir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
