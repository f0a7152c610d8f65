import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base';

// Two entries: `.` (src/index.ts, for host apps) and `./store` (src/for-stores.ts, for store
// authors), built as dist/index.* and dist/store.*. Both formats split shared code into chunks,
// so each class (KeyhookError above all) exists once whichever entry loaded it.
export default defineConfig({
  ...packageBuild,
  entry: { index: 'src/index.ts', store: 'src/for-stores.ts' },
  splitting: true,
});
