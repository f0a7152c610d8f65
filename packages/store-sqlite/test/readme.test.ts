import { checkReadme } from '@keyhook/testing/readme';
import { expect, it } from 'vitest';

/** The reader's own values the README's data-layer blocks name, as those blocks see them. */
const README_AMBIENT = `declare const db: import('better-sqlite3').Database;
  declare const keyhook: import('@keyhook/core').Keyhook;
  declare const tenantId: string;
  declare const runId: string;`;

it('every ts block of README.md compiles against the built packages', () => {
  const { blocks, problems } = checkReadme(new URL('..', import.meta.url), { ambient: README_AMBIENT });
  expect(blocks).toBeGreaterThan(0);
  expect(problems).toEqual([]);
}, 60_000);
