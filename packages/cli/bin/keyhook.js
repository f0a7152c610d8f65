#!/usr/bin/env node
// The executable npm links at install, which in the keyhook repository comes before any build:
// there (sources beside it) the CLI is built first, as `npm start` builds the server, with the
// build's output on stderr. A published package ships dist/ and no src/, and goes straight on.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const packageDir = new URL('..', import.meta.url);
if (existsSync(new URL('src/bin.ts', packageDir))) {
  const build = spawnSync(
    'npx',
    ['--no-install', 'turbo', 'run', 'build', '--filter=@keyhook/cli...', '--output-logs=errors-only'],
    {
      cwd: packageDir,
      stdio: ['ignore', process.stderr, process.stderr],
    },
  );
  if (build.status !== 0) {
    console.error('keyhook: building @keyhook/cli failed (see above)');
    process.exit(1);
  }
}
await import('../dist/bin.js');
