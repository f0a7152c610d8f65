import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A newcomer asking "where is X decided?" should guess right the first time: no two files of
// src (or of test) share a name in different folders, and none is another's name plus a suffix
// (`store.ts` beside `store/`, `openapi.ts` beside `openapi-route.ts`) or its plural.

interface Entry {
  path: string;
  stem: string;
  directory: boolean;
}

function entriesOf(root: string): Entry[] {
  const found: Entry[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const directory = statSync(path).isDirectory();
      found.push({ path: relative(root, path), stem: name.replace(/(\.test)?\.[cm]?ts$/, ''), directory });
      if (directory) walk(path);
    }
  };
  walk(root);
  return found;
}

/** Words without a plural `s`: `keys-format` and `key-formats` are one name. */
const singular = (stem: string) => stem.replace(/s(?=-|$)/g, '');

function collisions(root: string): string[] {
  const entries = entriesOf(root);
  const found: string[] = [];
  for (const [i, a] of entries.entries()) {
    for (const b of entries.slice(i + 1)) {
      // A folder is compared with the files beside it, not with those inside it or elsewhere.
      const folder = a.directory ? a : b.directory ? b : undefined;
      if (folder) {
        const other = folder === a ? b : a;
        if (other.directory || join(folder.path, '..') !== join(other.path, '..')) continue;
      }
      const [x, y] = [singular(a.stem), singular(b.stem)];
      if (
        x === y ||
        x.startsWith(`${y}-`) ||
        y.startsWith(`${x}-`) ||
        a.stem.startsWith(b.stem) ||
        b.stem.startsWith(a.stem)
      )
        found.push(`${a.path} ~ ${b.path}`);
    }
  }
  return found;
}

describe('file names', () => {
  for (const folder of ['src', 'test']) {
    it(`in ${folder}, each names one room`, () => {
      expect(collisions(fileURLToPath(new URL(`../${folder}`, import.meta.url)))).toEqual([]);
    });
  }

  it('finds the collisions it is for, and passes a folder beside files of its name elsewhere', () => {
    const root = mkdtempSync(join(tmpdir(), 'keyhook-names-'));
    try {
      for (const file of [
        'store.ts',
        'store/types.ts',
        'services.ts',
        'keys/service.ts',
        'webhooks/service.ts',
        'http/openapi.ts',
        'http/openapi-route.ts',
        'test/key-formats.test.ts',
        'test/keys-format.test.ts',
        'admin/session.ts',
        'http/admin-keys.ts',
      ]) {
        mkdirSync(join(root, file, '..'), { recursive: true });
        writeFileSync(join(root, file), '');
      }
      expect(collisions(root).sort()).toEqual([
        'http/openapi-route.ts ~ http/openapi.ts',
        'keys/service.ts ~ services.ts',
        'keys/service.ts ~ webhooks/service.ts',
        'services.ts ~ webhooks/service.ts',
        'store ~ store.ts',
        'test/key-formats.test.ts ~ test/keys-format.test.ts',
      ]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
