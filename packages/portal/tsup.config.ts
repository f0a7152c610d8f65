import { defineConfig } from 'tsup';
import { packageBuild } from '../../tsup.base';

// The server side only; scripts/build-app.mjs builds the browser app into dist/assets afterwards
// (tsup's `clean` would remove it otherwise).
export default defineConfig(packageBuild);
