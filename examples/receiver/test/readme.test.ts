import { checkReadme } from '@keyhook/testing/readme';
import { describe, expect, it } from 'vitest';

/** The README's TypeScript is checked like the code beside it, so it cannot drift from the API. */
describe('README.md', () => {
  it('every ts block compiles as written, as a module in src/', () => {
    const { blocks, problems } = checkReadme(new URL('..', import.meta.url), {
      ambient: [
        'declare function lastFeedId(): Promise<string | undefined>;',
        'declare function saveLastFeedId(id: string | undefined): Promise<void>;',
      ].join('\n'),
    });
    expect(blocks).toBeGreaterThanOrEqual(1);
    expect(problems).toEqual([]);
  }, 60_000);
});
