import { fileURLToPath } from 'node:url';
import { mergeConfig } from 'vitest/config';
import shared from '../../vitest.shared';

// The shared config maps `@keyhook/webhook-verify` to its source; `./web` needs the same.
export default mergeConfig(shared, {
  resolve: {
    alias: [
      {
        find: /^@keyhook\/webhook-verify\/web$/,
        replacement: fileURLToPath(new URL('./src/web.ts', import.meta.url)),
      },
    ],
  },
});
