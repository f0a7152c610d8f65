import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);

/** The README's TypeScript is checked like the code beside it, so it cannot drift from the API. */
describe('README.md', () => {
  it('every ts block compiles as written, as a module in src/', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    const config = ts.getParsedCommandLineOfConfigFile(path.join(root, 'tsconfig.json'), undefined, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    })!;
    // Virtual files: nothing is written into src/, and relative imports resolve as they would there.
    const virtual = new Map(blocks.map((code, i) => [path.join(root, 'src', `readme-block-${i}.ts`), code]));
    const host = ts.createCompilerHost(config.options);
    const { fileExists, readFile, getSourceFile } = host;
    host.fileExists = (file) => virtual.has(file) || fileExists(file);
    host.readFile = (file) => virtual.get(file) ?? readFile(file);
    host.getSourceFile = (file, language, ...rest) => {
      const code = virtual.get(file);
      return code === undefined
        ? getSourceFile(file, language, ...rest)
        : ts.createSourceFile(file, code, language);
    };
    const program = ts.createProgram([...virtual.keys()], config.options, host);
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((diagnostic) => diagnostic.file && virtual.has(diagnostic.file.fileName))
      .map((diagnostic) => {
        const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
        const block = [...virtual.keys()].indexOf(diagnostic.file!.fileName);
        return `block ${block}, line ${line + 1}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
      });
    expect(problems).toEqual([]);
  }, 60_000);

  it('the blocks that say they show a file whole are that file', () => {
    for (const file of ['src/invoices-keyhook.ts', 'src/openapi.ts']) {
      expect(readme).toContain(`\`${file}\`, whole`);
      expect(blocks).toContain(readFileSync(path.join(root, file), 'utf8'));
    }
  });
});
