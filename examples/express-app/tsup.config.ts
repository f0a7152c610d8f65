import { defineConfig } from 'tsup';

// An application, not a library: ESM only, no type declarations.
export default defineConfig({
  entry: ['src/main.ts', 'src/app.ts'],
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
