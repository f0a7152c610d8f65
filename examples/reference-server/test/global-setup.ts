import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { announceBrowserSuites } from '@keyhook/testing/browser-plan';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const self = fileURLToPath(new URL('../', import.meta.url));

interface Dependency {
  name: string;
  /** The folders it is built from. */
  sources: string[];
  /** What its build writes last: missing or older than a source, the build is stale. */
  built: string;
  /** Run after tsup, in the package's folder. */
  afterTsup?: string[];
}

const PACKAGE: Omit<Dependency, 'name'> = { sources: ['src'], built: 'dist/index.js' };

// What dist/main.js imports at run time, in build order.
const DEPENDENCIES: Dependency[] = [
  { name: 'core', ...PACKAGE },
  { name: 'store-sqlite', ...PACKAGE },
  { name: 'store-postgres', ...PACKAGE },
  { name: 'adapter-fastify', ...PACKAGE },
  // The portal's pages are an app of their own (app/), built after tsup into dist/assets; even
  // the tests, which run the portal's sources, serve that build.
  {
    name: 'portal',
    sources: ['src', 'app'],
    built: 'dist/assets/manifest.json',
    afterTsup: ['node', 'scripts/build-app.mjs'],
  },
];

/**
 * The process test runs `node dist/main.js`, which loads the packages' builds, not their
 * sources. Rebuild any package whose dist is missing or older than its sources, then this one.
 */
export default function setup(): void {
  // Once per run, before any file: the browser walkthrough is skipped when Chromium is missing.
  announceBrowserSuites();
  for (const dependency of DEPENDENCIES) {
    const dir = path.join(root, 'packages', dependency.name);
    if (isStale(dir, dependency)) {
      build(dir, `@keyhook/${dependency.name} (its dist was missing or older than its sources)`);
      if (dependency.afterTsup) run(dir, dependency.afterTsup);
    }
  }
  build(self, '@keyhook/reference-server');
}

function build(dir: string, label: string): void {
  console.log(`[global-setup] building ${label}`);
  run(dir, ['npx', 'tsup', '--silent']);
}

function run(dir: string, [command, ...args]: string[]): void {
  execFileSync(command!, args, { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
}

function isStale(dir: string, { sources, built }: Dependency): boolean {
  const output = path.join(dir, built);
  if (!existsSync(output)) return true;
  const newest = Math.max(...sources.map((source) => newestMtime(path.join(dir, source))));
  return newest > statSync(output).mtimeMs;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}
