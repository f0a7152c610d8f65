import type { Options } from 'tsup';

/** One build for every published package: ESM and CJS side by side, each with its own types. */
export const packageBuild: Options = {
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  shims: true,
};
