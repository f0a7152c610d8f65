import { checkReadme } from '@keyhook/testing/readme';
import { expect, it } from 'vitest';

it('every ts block of README.md compiles against the built packages', () => {
  const { blocks, problems } = checkReadme(new URL('..', import.meta.url), {
    // The reader's own code and values, which the README names.
    ambient: `declare const log: { warn(error: unknown, message: string): void };
     declare const pool: import('pg').Pool;
     declare const keyhook: import('@keyhook/core').Keyhook;
     declare const tenantId: string;
     declare const runId: string;`,
  });
  expect(blocks).toBeGreaterThan(0);
  expect(problems).toEqual([]);
}, 60_000);
