import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Io } from '../src/io.js';

/** The built executable: the tests run what `npx keyhook` runs. */
export const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

/** The migrations a store package ships, named by their files without `.sql`, in order. */
export function shippedMigrations(store: 'store-sqlite' | 'store-postgres'): string[] {
  return readdirSync(new URL(`../../${store}/migrations/`, import.meta.url))
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => file.slice(0, -'.sql'.length));
}

export interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** The environment of every run, without the variables the commands read, so a developer's shell cannot leak in. */
const BASE_ENV: Record<string, string | undefined> = {
  ...process.env,
  DATABASE_URL: undefined,
  KEYHOOK_ADMIN_SECRET: undefined,
};

export function assertBuilt(): void {
  if (!existsSync(BIN)) {
    throw new Error(`${BIN} is missing: run \`npx turbo run build --filter=@keyhook/cli...\` first`);
  }
}

/**
 * Runs `node <bin> ...args` as a child process and resolves with its exit code and output. Async
 * (execFile, not execFileSync): a synchronous child would block this process's event loop.
 */
export function run(
  args: string[],
  options: { env?: Record<string, string | undefined>; bin?: string; cwd?: string } = {},
): Promise<Outcome> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [options.bin ?? BIN, ...args],
      { env: { ...BASE_ENV, ...options.env }, cwd: options.cwd, timeout: 30_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** An Io for running the program in-process: it keeps what is written, and has only `env`. */
export function captured(
  env: Record<string, string | undefined> = {},
): Io & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    env,
    stdout: { write: (text: string) => out.push(text) },
    stderr: { write: (text: string) => err.push(text) },
  };
}
