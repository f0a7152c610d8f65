import { readFileSync } from 'node:fs';
import { checkReadme } from '@keyhook/testing/readme';
import { describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url);
const readme = readFileSync(new URL('README.md', root), 'utf8');

/** The README's TypeScript is checked like the code beside it, so it cannot drift from the API. */
describe('README.md', () => {
  it('every ts block compiles as written, as a module in src/', () => {
    const { blocks, problems } = checkReadme(root);
    expect(blocks).toBeGreaterThanOrEqual(5);
    expect(problems).toEqual([]);
  }, 60_000);

  it('the blocks that say they show a file whole are that file', () => {
    for (const file of ['src/keyhook.ts', 'src/openapi.ts']) {
      expect(readme).toContain(`\`${file}\`, whole`);
      expect(readme).toContain(`\`\`\`ts\n${readFileSync(new URL(file, root), 'utf8')}\`\`\``);
    }
  });
});
