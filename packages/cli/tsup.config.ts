import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base';

// An executable, not a library: ESM only, no declarations.
export default defineConfig({
  ...packageBuild,
  entry: ['src/bin.ts'],
  format: ['esm'],
  dts: false,
});
