import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { packedApp } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, type Outcome } from './support.js';

const exec = promisify(execFile);
const repository = fileURLToPath(new URL('../../..', import.meta.url));
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const USAGE = /^Usage: keyhook <command> \[options\]\n/;

/** `npx …args` in `cwd`, as a person types it; npm's own messages stay on stderr. */
async function npx(args: string[], cwd: string): Promise<Outcome> {
  try {
    const { stdout, stderr } = await exec('npx', args, {
      cwd,
      timeout: 120_000,
      env: { ...process.env, CI: 'true' },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('npx keyhook, as the README says', () => {
  // An app outside the repository, with core and the CLI installed from their packed tarballs.
  let app = '';

  beforeAll(async () => {
    assertBuilt();
    app = await packedApp('npx', ['@keyhook/core', '@keyhook/cli']);
  }, 360_000);
  afterAll(() => {
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it('recommends a form in which npx passes the arguments on: --no-install, not --no', () => {
    expect(readme).toContain('npx --no-install keyhook migrate');
    // `npx --no keyhook --help` is npm's help: npx reads `keyhook` as the value of `--no`.
    expect(readme.match(/^npx --no keyhook/m)).toBeNull();
  });

  it.each([
    ['npx keyhook --help', ['keyhook', '--help']],
    ['npx --no-install keyhook --help', ['--no-install', 'keyhook', '--help']],
  ])('in an app: %s prints the CLI’s usage', async (_line, args) => {
    const { code, stdout } = await npx(args, app);
    expect(stdout).toMatch(USAGE);
    expect(code).toBe(0);
  });

  it('in an app: npx --no-install keyhook generate-encryption-key prints only a key', async () => {
    const { code, stdout } = await npx(['--no-install', 'keyhook', 'generate-encryption-key'], app);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^[A-Za-z0-9+/]{43}=\n$/);
  });

  it('at the repository root: npx keyhook --help builds the CLI if need be and runs it, output on stdout only', async () => {
    const { code, stdout } = await npx(['keyhook', '--help'], repository);
    expect(stdout).toMatch(USAGE);
    expect(code).toBe(0);
  }, 180_000); // a build when the sources changed since the last one
});
