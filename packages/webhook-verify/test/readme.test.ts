import { checkReadme } from '@keyhook/testing/readme';
import { expect, it } from 'vitest';

it('every ts block of README.md compiles against the built package', () => {
  const { blocks, problems } = checkReadme(new URL('..', import.meta.url), {
    // The reader's own code and values, which the README names.
    ambient: `declare function handleEvent(event: unknown): void | Promise<void>;
     declare const secret: string;
     declare const base: string;
     declare const req: { body: Uint8Array; headers: Record<string, string | string[] | undefined> };`,
    // The NestJS recipe: Nest's decorators are the legacy ones, which a Nest project enables.
    compilerOptions: { experimentalDecorators: true },
  });
  expect(blocks).toBeGreaterThan(0);
  expect(problems).toEqual([]);
}, 60_000);
