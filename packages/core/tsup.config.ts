import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base';

// Two entries, `.` and `./store`. Both formats split shared code into chunks, so each class
// (KeyhookError above all) exists once whichever entry loaded it, and `instanceof` holds.
export default defineConfig({
  ...packageBuild,
  entry: ['src/index.ts', 'src/store.ts'],
  splitting: true,
});
