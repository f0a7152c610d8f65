import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const self = fileURLToPath(new URL('../', import.meta.url));

// What dist/main.js imports at run time, in build order.
const DEPENDENCIES = ['core', 'store-sqlite', 'store-postgres', 'adapter-fastify'];

/**
 * The process test runs `node dist/main.js`, which loads the packages' builds, not their
 * sources. Rebuild any package whose dist is missing or older than its sources, then this one.
 */
export default function setup(): void {
  for (const name of DEPENDENCIES) {
    const dir = path.join(root, 'packages', name);
    if (isStale(dir)) build(dir, `@keyhook/${name} (its dist was missing or older than src)`);
  }
  build(self, '@keyhook/reference-server');
}

function build(dir: string, label: string): void {
  console.log(`[global-setup] building ${label}`);
  execFileSync('npx', ['tsup', '--silent'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
}

function isStale(dir: string): boolean {
  const built = path.join(dir, 'dist', 'index.js');
  if (!existsSync(built)) return true;
  return newestMtime(path.join(dir, 'src')) > statSync(built).mtimeMs;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}
