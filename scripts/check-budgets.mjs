#!/usr/bin/env node
// Fails when the surface or the words outgrow their budgets, so that a later capability pays for
// its words as the API report makes it pay for its names. Run by `npm run lint` (and so by CI).
// - Every public package under packages/ has a row in the root README's package table.
// - Core's root entry (packages/core/src/index.ts) exports at most 90 names.
// - A package README holds at most 350 lines, a store's at most 250; BENCHMARKS.md at most 200.
// - Hand-written Markdown, all of it, stays under 300 KB. Changesets, CHANGELOGs and the API
//   reports (etc/*.api.md) are written by tools and not counted.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, trackedFiles } from './tracked-files.mjs';

const ROOT_EXPORTS = 90;
const README_LINES = 350;
const STORE_README_LINES = 250;
const BENCHMARKS_LINES = 200;
const MARKDOWN_BYTES = 300_000;

const problems = [];
const read = (file) => readFileSync(path.join(ROOT, file), 'utf8');
const linesOf = (text) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

const readme = read('README.md');
for (const manifest of trackedFiles((file) => /^packages\/[^/]+\/package\.json$/.test(file))) {
  const { name, private: isPrivate } = JSON.parse(read(manifest));
  if (isPrivate) continue;
  const row = `| [\`${name}\`](${path.dirname(manifest)}) |`;
  if (!readme.includes(row)) problems.push(`README.md: the package table has no row for ${name} (${row} …)`);
}

// The root entry is a list of `export { … } from` statements: each name counted once, and no
// other kind of export, which would hide names from the count.
const entry = read('packages/core/src/index.ts').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
const names = new Set();
for (const [, list] of entry.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s*from\s*'[^']+';/g))
  for (const part of list.split(',')) if (part.trim()) names.add(part.trim().replace(/^type\s+/, ''));
const otherExports = entry
  .replace(/export\s+(?:type\s+)?\{[^}]*\}\s*from\s*'[^']+';/g, '')
  .match(/\bexport\b/g);
if (otherExports)
  problems.push('packages/core/src/index.ts: exports only by `export { … } from`, so each name is counted');
if (names.size > ROOT_EXPORTS)
  problems.push(`packages/core/src/index.ts: ${names.size} names, over the root entry's ${ROOT_EXPORTS}`);

const markdown = trackedFiles(
  (file) =>
    file.endsWith('.md') &&
    !file.startsWith('.changeset/') &&
    path.basename(file) !== 'CHANGELOG.md' &&
    !/(^|\/)etc\/[^/]+\.api\.md$/.test(file),
);
let bytes = 0;
for (const file of markdown) {
  const text = read(file);
  bytes += Buffer.byteLength(text);
  const lines = linesOf(text);
  const budget = /^packages\/store-[^/]+\/README\.md$/.test(file)
    ? STORE_README_LINES
    : /^packages\/[^/]+\/README\.md$/.test(file)
      ? README_LINES
      : file === 'BENCHMARKS.md'
        ? BENCHMARKS_LINES
        : undefined;
  if (budget !== undefined && lines > budget) problems.push(`${file}: ${lines} lines, over its ${budget}`);
}
if (bytes > MARKDOWN_BYTES)
  problems.push(`hand-written Markdown: ${bytes} bytes, over ${MARKDOWN_BYTES} (${markdown.length} files)`);

if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
