#!/usr/bin/env node
// Fails when the layering breaks (docs/architecture.md "Packages and what they may import"): a
// published package's sources import a keyhook package its layer may not, or a package's own
// modules import each other in a cycle at run time (type-only imports do not count: they are
// erased). Run by `npm run lint` (and so by CI).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, trackedFiles } from './tracked-files.mjs';

/** Which keyhook packages each published package's `src` may import at run time or for types. */
const MAY_IMPORT = {
  core: [],
  'store-sqlite': ['@keyhook/core/store'],
  'store-postgres': ['@keyhook/core/store'],
  'adapter-express': ['@keyhook/core', '@keyhook/core/http'],
  'adapter-fastify': ['@keyhook/core', '@keyhook/core/http'],
  'webhook-verify': [],
  portal: ['@keyhook/core', '@keyhook/core/http'],
  cli: ['@keyhook/core', '@keyhook/core/http', '@keyhook/store-sqlite', '@keyhook/store-postgres'],
  'store-conformance': ['@keyhook/core', '@keyhook/core/http', '@keyhook/core/store'],
  testing: [
    '@keyhook/core',
    '@keyhook/core/http',
    '@keyhook/core/store',
    '@keyhook/store-conformance',
    '@keyhook/store-conformance/support',
  ],
};

// `import … from '…'`, `export … from '…'`, `import('…')`; a leading `type` marks an erased one.
const IMPORT =
  /(?:^|\n)\s*(import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The specifiers `source` imports: `{ specifier, runtime }`. */
export function importsOf(source) {
  const found = [];
  for (const match of source.matchAll(IMPORT)) {
    const specifier = match[3] ?? match[4];
    // `import { type A, type B } from` is erased too.
    const names = /\{([^}]*)\}/.exec(match[0])?.[1];
    const allTypes = names?.split(',').every((name) => /^\s*(type\s|$)/.test(name)) === true;
    found.push({ specifier, runtime: match[2] === undefined && !allTypes });
  }
  return found;
}

/** Cycles in `graph` (module → modules it imports at run time), each as a list of modules. */
export function cyclesOf(graph) {
  const cycles = [];
  const state = new Map(); // 1: on the path, 2: done
  const stack = [];
  const visit = (node) => {
    state.set(node, 1);
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 1) cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 2);
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

function selfTest() {
  const parsed = importsOf(
    "import { a } from './a.js';\nimport type { B } from './b.js';\nimport { type C, type D } from './c.js';\nexport { e } from './e.js';\nconst f = await import('./f.js');",
  );
  const expected = [
    { specifier: './a.js', runtime: true },
    { specifier: './b.js', runtime: false },
    { specifier: './c.js', runtime: false },
    { specifier: './e.js', runtime: true },
    { specifier: './f.js', runtime: true },
  ];
  const cycles = cyclesOf(
    new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]),
  );
  if (
    JSON.stringify(parsed) !== JSON.stringify(expected) ||
    JSON.stringify(cycles) !== '[["a","b","c","a"]]'
  ) {
    console.error('check-imports: the self-test failed:', parsed, cycles);
    process.exit(2);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  selfTest();
  const problems = [];
  const graphs = new Map();
  for (const file of trackedFiles((name) => /^packages\/[^/]+\/src\/.+\.ts$/.test(name))) {
    const pkg = file.split('/')[1];
    const source = readFileSync(path.join(ROOT, file), 'utf8');
    if (!graphs.has(pkg)) graphs.set(pkg, new Map());
    const edges = [];
    for (const { specifier, runtime } of importsOf(source)) {
      if (specifier.startsWith('.')) {
        if (runtime) edges.push(path.join(path.dirname(file), specifier).replace(/\.js$/, '.ts'));
      } else if (specifier.startsWith('@keyhook/') && !(MAY_IMPORT[pkg] ?? []).includes(specifier)) {
        problems.push(`${file}: imports ${specifier}, which @keyhook/${pkg} may not (docs/architecture.md)`);
      }
    }
    graphs.get(pkg).set(file, edges);
  }
  for (const graph of graphs.values()) {
    for (const cycle of cyclesOf(graph)) problems.push(`an import cycle at run time: ${cycle.join(' → ')}`);
  }
  if (problems.length > 0) {
    console.error(`check-imports: ${problems.length} problem(s)`);
    for (const line of problems) console.error(`  ${line}`);
    process.exit(1);
  }
  console.log(`check-imports: ${graphs.size} packages, each imports only its layers, no cycle at run time`);
}
