import { checkReadme } from '@keyhook/testing/readme';
import { describe, expect, it } from 'vitest';

describe('README code blocks compile against the built packages', () => {
  it.each([
    // This README's block is written as a file at the package's root.
    ['this server’s README.md', new URL('..', import.meta.url), '.'],
    ['the repository’s README.md', new URL('../../..', import.meta.url), '.'],
  ])(
    'every ts block of %s',
    (_name, dir, placedIn) => {
      const { blocks, problems } = checkReadme(dir, { placedIn });
      expect(blocks).toBeGreaterThan(0);
      expect(problems).toEqual([]);
    },
    60_000,
  );
});
