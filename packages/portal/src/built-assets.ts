import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `dist/assets/manifest.json`, as scripts/build-app.mjs writes it. */
export interface AssetManifest {
  /** The first page's script and stylesheet. */
  entry: { script: string; style: string };
  /** Every file the app may ask for, by name. */
  files: string[];
}

export interface BuiltAsset {
  body: string;
  contentType: string;
}

export interface BuiltAssets {
  entry: AssetManifest['entry'];
  files: ReadonlyMap<string, BuiltAsset>;
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
// A content-hashed name such as `app-3QF7K2LM.js`: no folder, nothing to traverse.
const ASSET_NAME = /^[A-Za-z0-9_-]+\.(?:js|css)$/;

/**
 * The built module runs from `dist/` (assets beside it, in `dist/assets/`); the tests run the
 * sources in `src/`, which read the same build.
 */
export function defaultAssetsDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return path.basename(here) === 'dist' ? path.join(here, 'assets') : path.join(here, '..', 'dist', 'assets');
}

/** Reads the manifest and every file it names, once, into memory. */
export function loadBuiltAssets(dir: string = defaultAssetsDir()): BuiltAssets {
  let manifest: AssetManifest;
  try {
    manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as AssetManifest;
  } catch (cause) {
    throw new Error(
      `keyhookPortal: the portal's built assets are missing from ${dir}; build @keyhook/portal (npm run build) first`,
      { cause },
    );
  }
  const files = new Map<string, BuiltAsset>();
  for (const name of manifest.files) {
    if (!ASSET_NAME.test(name))
      throw new Error(`keyhookPortal: the asset manifest names ${JSON.stringify(name)}`);
    const contentType = CONTENT_TYPES[path.extname(name)]!;
    files.set(name, { body: readFileSync(path.join(dir, name), 'utf8'), contentType });
  }
  for (const name of [manifest.entry.script, manifest.entry.style]) {
    if (!files.has(name))
      throw new Error(`keyhookPortal: the asset manifest's entry ${name} is not among its files`);
  }
  return { entry: manifest.entry, files };
}
