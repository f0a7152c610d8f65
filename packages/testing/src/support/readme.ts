import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

export interface ReadmeCheck {
  /** How many ` ```ts ` blocks the README holds. */
  blocks: number;
  /** Each compile error, as `block N, line L: message`; none when every block compiles. */
  problems: string[];
}

export interface ReadmeCheckOptions {
  /**
   * Declarations of the stand-ins a README names for the reader's own code
   * (`declare function handleEvent(event: unknown): void;`), and nothing else.
   */
  ambient?: string;
  /** Where the blocks are placed, relative to the package: what their relative imports are from. Default `src`. */
  placedIn?: string;
  /**
   * Compiler options the README's readers set, over the strict defaults below
   * (`{ experimentalDecorators: true }` for a framework with legacy decorators). Every block of
   * the README is checked with them.
   */
  compilerOptions?: ts.CompilerOptions;
}

/**
 * Type-checks every ` ```ts ` block of a package's README.md as a module of its own, placed in
 * the package (its `src/` by default), so imports resolve as a user's would: `@keyhook/*` to
 * the built packages' declarations.
 */
export function checkReadme(packageDir: URL | string, options: ReadmeCheckOptions = {}): ReadmeCheck {
  const root = typeof packageDir === 'string' ? packageDir : fileURLToPath(packageDir);
  const blocks = readmeBlocks(root);
  const at = path.join(root, options.placedIn ?? 'src');
  const virtual = new Map(blocks.map((code, i) => [path.join(at, `readme-block-${i}.ts`), code]));
  const ambientFile = path.join(at, 'readme-ambient.d.ts');
  const ambient = options.ambient ?? '';
  virtual.set(ambientFile, ambient);
  const compilerOptions: ts.CompilerOptions = {
    strict: true,
    noUncheckedIndexedAccess: true,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
    ...options.compilerOptions,
  };
  const host = ts.createCompilerHost(compilerOptions);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => virtual.has(file) || fileExists(file);
  host.readFile = (file) => virtual.get(file) ?? readFile(file);
  host.getSourceFile = (file, language, ...rest) => {
    const code = virtual.get(file);
    return code === undefined
      ? getSourceFile(file, language, ...rest)
      : ts.createSourceFile(file, code, language);
  };
  const program = ts.createProgram([...virtual.keys()], compilerOptions, host);
  const names = [...virtual.keys()];
  const problems = ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file && virtual.has(diagnostic.file.fileName))
    .map((diagnostic) => {
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
      const where =
        diagnostic.file!.fileName === ambientFile
          ? 'ambient'
          : `block ${names.indexOf(diagnostic.file!.fileName)}`;
      return `${where}, line ${line + 1}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
    });
  return { blocks: blocks.length, problems };
}

/** The ` ```ts ` blocks of a package's README.md, in order. */
export function readmeBlocks(packageDir: URL | string): string[] {
  const root = typeof packageDir === 'string' ? packageDir : fileURLToPath(packageDir);
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  return [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

let runs = 0;

/**
 * Runs the one ` ```ts ` block of a package's README that contains `marker`, as the reader would
 * paste it: compiled to JavaScript, placed in the package (so its imports resolve from there),
 * with `values` standing for the reader's own values the README names (the ones `checkReadme`'s
 * `ambient` declares). Resolves when the block's top level has finished.
 */
export async function runReadmeBlock(
  packageDir: URL | string,
  marker: string,
  values: Record<string, unknown>,
): Promise<void> {
  const root = typeof packageDir === 'string' ? packageDir : fileURLToPath(packageDir);
  const matching = readmeBlocks(root).filter((block) => block.includes(marker));
  if (matching.length !== 1)
    throw new Error(`runReadmeBlock: ${matching.length} blocks of ${root}/README.md contain ${marker}`);
  const { outputText } = ts.transpileModule(matching[0]!, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  const key = `__keyhookReadme${process.pid}_${runs++}`;
  (globalThis as Record<string, unknown>)[key] = values;
  const names = Object.keys(values).join(', ');
  const file = path.join(root, `.readme-block-${process.pid}-${runs}.mjs`);
  writeFileSync(file, `const { ${names} } = globalThis[${JSON.stringify(key)}];\n${outputText}`);
  try {
    await import(/* @vite-ignore */ pathToFileURL(file).href);
  } finally {
    rmSync(file, { force: true });
    delete (globalThis as Record<string, unknown>)[key];
  }
}
