import { checkReadme } from '@keyhook/testing/readme';
import { expect, it } from 'vitest';

it('every ts block of README.md compiles against the built packages', () => {
  const { blocks, problems } = checkReadme(new URL('..', import.meta.url));
  expect(blocks).toBeGreaterThan(0);
  expect(problems).toEqual([]);
}, 60_000);
