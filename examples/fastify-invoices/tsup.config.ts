import { defineConfig } from 'tsup';

// An application, not a library: ESM only, no type declarations. Dependencies stay external.
export default defineConfig({
  entry: ['src/main.ts', 'src/app.ts', 'src/invoice-receiver.ts', 'src/receiver-main.ts'],
  format: ['esm'],
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
