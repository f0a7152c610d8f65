import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, BIN, run } from './support.js';

beforeAll(assertBuilt);

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

describe('keyhook', () => {
  it('keeps the shebang at the top of the built entry, so npx can run it', () => {
    expect(readFileSync(BIN, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
  });

  it('--help lists every command and exits 0', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    for (const command of ['migrate', 'admin-token', 'generate-encryption-key']) {
      expect(stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
  });

  it("<command> --help prints that command's usage and exits 0", async () => {
    for (const command of ['migrate', 'admin-token', 'generate-encryption-key']) {
      const { code, stdout } = await run([command, '--help']);
      expect(code).toBe(0);
      expect(stdout).toMatch(new RegExp(`^Usage: keyhook ${command}`));
    }
  });

  it('--version and -V print the package version', async () => {
    for (const flag of ['--version', '-V']) {
      const { code, stdout } = await run([flag]);
      expect(code).toBe(0);
      expect(stdout).toBe(`${version}\n`);
    }
  });

  it('with no command prints the usage to stderr and exits 2', async () => {
    const { code, stdout, stderr } = await run([]);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^Usage: keyhook <command>/);
  });

  it('an unknown command or option exits 2 with a message', async () => {
    const command = await run(['migrat']);
    expect(command.code).toBe(2);
    expect(command.stderr).toMatch(/unknown command; the commands are migrate, admin-token/);
    const option = await run(['migrate', '--databse', 'x.db']);
    expect(option.code).toBe(2);
    expect(option.stderr).toBe("keyhook migrate: Unknown option '--databse' (keyhook migrate --help)\n");
    const argument = await run(['generate-encryption-key', 'now']);
    expect(argument.code).toBe(2);
    expect(argument.stderr).toMatch(/unexpected argument/);
  });
});
