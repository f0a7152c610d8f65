#!/usr/bin/env node
// Fails when the repository's front door stops listing what it ships: every public package under
// packages/ has a row in the root README's package table. Run by `npm run lint` (and so by CI).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, trackedFiles } from './tracked-files.mjs';

const problems = [];
const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
for (const manifest of trackedFiles((file) => /^packages\/[^/]+\/package\.json$/.test(file))) {
  const { name, private: isPrivate } = JSON.parse(readFileSync(path.join(ROOT, manifest), 'utf8'));
  if (isPrivate) continue;
  const row = `| [\`${name}\`](${path.dirname(manifest)}) |`;
  if (!readme.includes(row)) problems.push(`README.md: the package table has no row for ${name} (${row} …)`);
}

if (problems.length > 0) {
  console.error(problems.join('\n'));
  process.exit(1);
}
