import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const repository = fileURLToPath(new URL('../../../..', import.meta.url));

/**
 * An app outside the repository, as a user makes one: a `package.json` of its own, the named
 * workspaces packed and installed from their tarballs, and `extra` packages from the registry
 * (npm's cache first). The packages must be built already (turbo builds before tests), so the
 * packs skip prepack. Returns the app's directory; the caller removes it.
 */
export async function packedApp(
  label: string,
  workspaces: readonly string[],
  extra: readonly string[] = [],
): Promise<string> {
  for (const workspace of workspaces) {
    const dist = join(repository, 'packages', workspace.replace('@keyhook/', ''), 'dist');
    if (!existsSync(dist)) throw new Error(`${workspace} is not built: run npm run build first`);
  }
  const app = mkdtempSync(join(tmpdir(), `keyhook-${label}-`));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: label, private: true, type: 'module' }));
  await exec(
    'npm',
    [
      'pack',
      '--ignore-scripts',
      '--silent',
      '--pack-destination',
      app,
      ...workspaces.flatMap((w) => ['-w', w]),
    ],
    { cwd: repository },
  );
  const tarballs = readdirSync(app).filter((file) => file.endsWith('.tgz'));
  if (tarballs.length !== workspaces.length) {
    throw new Error(`packed ${tarballs.length} tarballs for ${workspaces.length} workspaces`);
  }
  await exec(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      ...tarballs.map((file) => `./${file}`),
      ...extra,
    ],
    { cwd: app, timeout: 300_000 },
  );
  return app;
}
