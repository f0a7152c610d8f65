import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base';

// Three entries: `.` (src/index.ts, for host apps), `./http` (src/for-http.ts, for adapters and
// a host's own routes) and `./store` (src/for-stores.ts, for store authors), built as
// dist/index.*, dist/http.* and dist/store.*. Both formats split shared code into chunks,
// so each class (KeyhookError above all) exists once whichever entry loaded it.
export default defineConfig({
  ...packageBuild,
  entry: { index: 'src/index.ts', http: 'src/for-http.ts', store: 'src/for-stores.ts' },
  splitting: true,
});
