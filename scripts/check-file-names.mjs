#!/usr/bin/env node
// Fails when two files of one package could be taken for each other: a newcomer asking "where
// is X decided?" should guess right the first time (CONTRIBUTING.md "Names"). Run by
// `npm run lint` (and so by CI).
//
// In each workspace package (packages/*, examples/*, benchmarks), the files under src/ and test/
// are checked, sources and tests apart (`x.test.ts` beside `x.ts` is the test of x). Two files collide when
// - they have the same name in different folders (`keys/view.ts`, `webhooks/view.ts`; an entry
//   `index.ts` per folder is allowed), or one is named like a folder (`store.ts` beside `store/`);
// - source only: one's name is the other's plus more (`sign.ts`, `sign-async.ts`, `signing.ts`;
//   tests may share a stem: `delivery.test.ts`, `delivery-crash.test.ts`);
// - their names differ only by plurals (`key-formats.test.ts`, `keys-format.test.ts`).
// And the stores name their operations alike: `src/operations/` holds the same files in each
// store, one per Store method, each exporting the function its name says (`lease-deliveries.ts`,
// `leaseDeliveries`), so a reader who knows one store finds the same operation in the other.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, trackedFiles } from './tracked-files.mjs';

const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

/** `src/keys/view.ts` → `view`; `test/keys-format.test.ts` → `keys-format`. */
const stemOf = (file) =>
  path
    .basename(file)
    .replace(CODE, '')
    .replace(/\.(test|spec)$/, '');

/** `keys-format` and `key-formats` alike: each word without a plural `s`. */
const singular = (stem) =>
  stem
    .split('-')
    .map((word) => word.replace(/s$/, ''))
    .join('-');

/** Every collision among `files` (paths inside one package), as `a ↔ b: why` lines. */
export function collisions(files) {
  const problems = [];
  const sides = new Map();
  for (const file of files) {
    if (!CODE.test(file) || file.endsWith('.d.ts')) continue;
    const side =
      /(^|\/)(test|tests|__tests__)\//.test(file) || /\.(test|spec)\.\w+$/.test(file) ? 'test' : 'source';
    if (!sides.has(side)) sides.set(side, []);
    sides.get(side).push(file);
  }
  for (const [side, list] of sides) {
    const folders = new Set(list.flatMap((file) => path.dirname(file).split('/')));
    for (let i = 0; i < list.length; i++) {
      const a = stemOf(list[i]);
      if (folders.has(a) && a !== 'src' && a !== 'test') {
        problems.push(`${list[i]} ↔ folder ${a}/: a file named like a folder`);
      }
      for (let j = i + 1; j < list.length; j++) {
        const b = stemOf(list[j]);
        if (a === b) {
          if (a !== 'index') problems.push(`${list[i]} ↔ ${list[j]}: the same name in two folders`);
        } else if (side === 'source' && (b.startsWith(a) || a.startsWith(b))) {
          problems.push(`${list[i]} ↔ ${list[j]}: one name is the other's plus a suffix`);
        } else if (singular(a) === singular(b)) {
          problems.push(`${list[i]} ↔ ${list[j]}: names that differ only by plurals`);
        }
      }
    }
  }
  return problems;
}

function selfTest() {
  const found = collisions([
    'src/keys/view.ts',
    'src/webhooks/view.ts',
    'src/store.ts',
    'src/store/memory.ts',
    'src/sign.ts',
    'src/sign-async.ts',
    'src/delivery-row.ts',
    'src/delivery-statements.ts',
    'src/index.ts',
    'src/web/index.ts',
    'test/view.test.ts',
    'test/delivery.test.ts',
    'test/delivery-crash.test.ts',
    'test/key-formats.test.ts',
    'test/keys-format.test.ts',
  ]);
  const expected = [
    'src/keys/view.ts ↔ src/webhooks/view.ts: the same name in two folders',
    'src/store.ts ↔ folder store/: a file named like a folder',
    "src/sign.ts ↔ src/sign-async.ts: one name is the other's plus a suffix",
    'test/key-formats.test.ts ↔ test/keys-format.test.ts: names that differ only by plurals',
  ];
  if (JSON.stringify(found) !== JSON.stringify(expected)) {
    console.error('check-file-names: the self-test failed:', found);
    process.exit(2);
  }
}

/** Where the stores' operation listings differ, or a module lacks the function it is named for. */
function operationProblems() {
  const IN_OPERATIONS = /^packages\/(store-[^/]+)\/src\/operations\/(.+)$/;
  const MODULE = /^([a-z]+(?:-[a-z]+)*)\.ts$/;
  const problems = [];
  const stores = new Map();
  for (const file of trackedFiles((name) => IN_OPERATIONS.test(name))) {
    const [, store, name] = IN_OPERATIONS.exec(file);
    const stem = MODULE.exec(name)?.[1];
    if (stem === undefined) {
      problems.push(
        `${file}: an operation module is named as its method, in kebab case (lease-deliveries.ts)`,
      );
      continue;
    }
    if (!stores.has(store)) stores.set(store, new Set());
    stores.get(store).add(stem);
    const method = stem.replace(/-(\w)/g, (_, letter) => letter.toUpperCase());
    const code = readFileSync(path.join(ROOT, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    if (!new RegExp(`^export (async )?function ${method}\\b`, 'm').test(code))
      problems.push(`${file}: exports no function ${method}`);
  }
  const all = new Set([...stores.values()].flatMap((stems) => [...stems]));
  for (const [store, stems] of stores)
    for (const stem of all)
      if (!stems.has(stem))
        problems.push(`packages/${store}/src/operations: no ${stem}.ts, which another store has`);
  return problems;
}

const PACKAGE_FILE = /^(packages\/[^/]+|examples\/[^/]+|benchmarks)\/((?:src|test)\/.+)$/;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  selfTest();
  const packages = new Map();
  for (const file of trackedFiles((name) => PACKAGE_FILE.test(name))) {
    const match = PACKAGE_FILE.exec(file);
    if (!packages.has(match[1])) packages.set(match[1], []);
    packages.get(match[1]).push(match[2]);
  }
  const problems = [...packages].flatMap(([dir, files]) =>
    collisions(files).map((line) => `${dir}: ${line}`),
  );
  problems.push(...operationProblems());
  if (problems.length > 0) {
    console.error(`check-file-names: ${problems.length} files misnamed:`);
    for (const line of problems) console.error(`  ${line}`);
    process.exit(1);
  }
  console.log(`check-file-names: ${packages.size} packages, no two files could be taken for each other`);
}
