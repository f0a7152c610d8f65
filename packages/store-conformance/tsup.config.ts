import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base';

// ESM only: the suite runs under Vitest, which loads test files as ES modules. Two entries: `.`
// (the suite and its fixtures) and `./support` (what its cases stand on), sharing one chunk.
export default defineConfig({
  ...packageBuild,
  entry: { index: 'src/index.ts', support: 'src/support/index.ts' },
  format: ['esm'],
  splitting: true,
});
