import { checkReadme } from '@keyhook/testing/readme';
import { expect, it } from 'vitest';

it('every ts block of README.md compiles against the built packages', () => {
  const { blocks, problems } = checkReadme(new URL('..', import.meta.url), {
    // The reader's own sign-in, which the README names.
    ambient: `declare function signedInAccount(req: import('express').Request): string;`,
  });
  expect(blocks).toBeGreaterThan(0);
  expect(problems).toEqual([]);
}, 60_000);
