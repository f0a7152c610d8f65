import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base';

// Two entries: `.` for Node and `./web`, which must never reach node:crypto. The `node:` prefix is
// kept so Deno and Bun resolve the Node entry too.
export default defineConfig({
  ...packageBuild,
  entry: ['src/index.ts', 'src/web.ts'],
  removeNodeProtocol: false,
});
