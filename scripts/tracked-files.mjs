// The repository's files as the checks in scripts/ read them: what git tracks, from the root.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Every tracked file that `keep` accepts, relative to the root. */
export function trackedFiles(keep) {
  return (
    execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
      .split('\0')
      // A tracked file deleted in the work tree is not read (the commit that deletes it is on its way).
      .filter((file) => file !== '' && keep(file) && existsSync(path.join(ROOT, file)))
  );
}
