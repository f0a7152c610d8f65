import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The surface cannot widen unnoticed: every name an entry exports is imported by some file
// outside core, named in a README or docs/ page, or part of the signature of another public name
// (an option's type, a service's input: named in the API reports beyond its own declaration); no
// value is exported by two entries.

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const core = fileURLToPath(new URL('../', import.meta.url));
const ENTRIES = {
  '@keyhook/core': 'src/index.ts',
  '@keyhook/core/http': 'src/for-http.ts',
  '@keyhook/core/store': 'src/for-stores.ts',
} as const;
type Entry = keyof typeof ENTRIES;

/** The values both entries export: a host passes the same loggers to keyhook and to its store. */
const SHARED_VALUES = ['consoleLogger', 'silentLogger'];

function exportsOf(): Record<Entry, Map<string, 'value' | 'type'>> {
  const files = Object.values(ENTRIES).map((file) => join(core, file));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const result = {} as Record<Entry, Map<string, 'value' | 'type'>>;
  for (const [entry, file] of Object.entries(ENTRIES) as [Entry, string][]) {
    const source = program.getSourceFile(join(core, file));
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`cannot read ${file}`);
    const names = new Map<string, 'value' | 'type'>();
    for (const symbol of checker.getExportsOfModule(module)) {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      names.set(symbol.name, target.flags & ts.SymbolFlags.Value ? 'value' : 'type');
    }
    result[entry] = names;
  }
  return result;
}

const SKIP = new Set(['node_modules', 'dist', '.git', '.turbo', 'etc', '.changeset']);

function repoFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) repoFiles(path, out);
    else if (/\.(ts|mts|cts|mjs|js|md)$/.test(name) && name !== 'CHANGELOG.md') out.push(path);
  }
  return out;
}

/** How often each word occurs in the three API reports, declarations included. */
function reportWords(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const report of ['core.api.md', 'core-http.api.md', 'core-store.api.md'])
    for (const word of readFileSync(join(core, 'etc', report), 'utf8').match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [])
      counts.set(word, (counts.get(word) ?? 0) + 1);
  return counts;
}

/** Names each entry is imported for by files outside core, and the words of every document. */
function uses() {
  const imported = new Set<string>();
  const documented = new Set<string>();
  for (const path of repoFiles(repo)) {
    const file = relative(repo, path);
    const text = readFileSync(path, 'utf8');
    if (!file.startsWith('packages/core/')) {
      for (const match of text.matchAll(
        /(?:import|export)\s+(?:type\s+)?\{([^}]*)\}\s*from\s*'(@keyhook\/core(?:\/store|\/http)?)'/g,
      ))
        for (const part of match[1]!.split(','))
          imported.add(
            `${match[2]}:${
              part
                .trim()
                .replace(/^type\s+/, '')
                .split(/\s+as\s+/)[0]
            }`,
          );
    }
    if (file.endsWith('.md'))
      for (const word of text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) documented.add(word);
  }
  return { imported, documented };
}

describe('what the entries export', () => {
  const entries = exportsOf();

  it('reads the three entries', () => {
    expect(entries['@keyhook/core'].get('createKeyhook')).toBe('value');
    expect(entries['@keyhook/core/http'].get('lingeringClose')).toBe('value');
    expect(entries['@keyhook/core/store'].get('runMigrations')).toBe('value');
    expect(entries['@keyhook/core/store'].get('Store')).toBe('type');
  });

  it('is imported by another package, example or benchmark, named in a README or docs/, or in a public signature', () => {
    const { imported, documented } = uses();
    const inReports = reportWords();
    const inSignature = (name: string) => (inReports.get(name) ?? 0) > 1;
    // A type both entries export is one declaration: an import from either counts.
    const importedFrom = (entry: Entry, name: string) =>
      imported.has(`${entry}:${name}`) ||
      (entries[entry].get(name) === 'type' &&
        (Object.keys(entries) as Entry[]).some(
          (other) => entries[other].has(name) && imported.has(`${other}:${name}`),
        ));
    const unused = (Object.keys(entries) as Entry[]).flatMap((entry) =>
      [...entries[entry].keys()]
        .filter((name) => !importedFrom(entry, name) && !documented.has(name) && !inSignature(name))
        .map((name) => `${entry}: ${name}`),
    );
    expect(unused).toEqual([]);
  });

  it('exports each value from one entry (the loggers aside), so a host and a store never wonder which', () => {
    const owners = new Map<string, Entry[]>();
    for (const [entry, names] of Object.entries(entries) as [Entry, Map<string, 'value' | 'type'>][])
      for (const [name, kind] of names)
        if (kind === 'value') owners.set(name, [...(owners.get(name) ?? []), entry]);
    const shared = [...owners].filter(([, from]) => from.length > 1);
    expect(shared.map(([name, from]) => `${name}: ${from.join(', ')}`).sort()).toEqual(
      SHARED_VALUES.map((name) => `${name}: @keyhook/core, @keyhook/core/store`),
    );
  });
});
