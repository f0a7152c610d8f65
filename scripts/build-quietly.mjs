#!/usr/bin/env node
// `npm start` builds what it runs first. The build's output is shown only when it fails, so
// the server's first screen is its own (the admin token and the first curl line).
import { spawnSync } from 'node:child_process';

console.error('building the packages it runs (turbo; cached after the first time)…');
const build = spawnSync(
  'npx',
  ['--no-install', 'turbo', 'run', 'build', '--output-logs=errors-only', ...process.argv.slice(2)],
  {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    shell: process.platform === 'win32',
  },
);
if (build.status !== 0) {
  process.stderr.write(`${build.stdout ?? ''}${build.stderr ?? ''}`);
  process.exit(build.status ?? 1);
}
