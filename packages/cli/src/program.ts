import { readFileSync } from 'node:fs';
import { adminTokenCommand } from './commands/admin-token.js';
import { generateEncryptionKeyCommand } from './commands/generate-encryption-key.js';
import { migrateCommand } from './commands/migrate.js';
import { describeError, redact } from './errors.js';
import { type Command, type Io, UsageError } from './io.js';

export type { Io } from './io.js';

const COMMANDS: readonly Command[] = [migrateCommand, adminTokenCommand, generateEncryptionKeyCommand];

/** Exit codes: documented in the README, so scripts can tell bad usage from a failed run. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

function programHelp(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length)) + 2;
  const list = COMMANDS.map((command) => `  ${command.name.padEnd(width)}${command.summary}`).join('\n');
  return `Usage: keyhook <command> [options]

Commands:
${list}

Options:
  -h, --help     Show this help; keyhook <command> --help shows a command's.
  -V, --version  Show the version.

Exit codes: 0 success, 1 failure, 2 bad usage.
`;
}

/** The version of this package, read from its package.json (next to dist/ once published). */
function version(): string {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return String(manifest.version);
}

/**
 * Runs the command line `argv` (without node and the script) and resolves with the exit code.
 * Nothing here touches `process`: bin.ts passes its streams and environment in.
 */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    io.stderr.write(programHelp());
    return EXIT_USAGE;
  }
  if (first === '-h' || first === '--help') {
    io.stdout.write(programHelp());
    return EXIT_OK;
  }
  if (first === '-V' || first === '--version') {
    io.stdout.write(`${version()}\n`);
    return EXIT_OK;
  }
  const command = COMMANDS.find((candidate) => candidate.name === first);
  if (command === undefined) {
    // The word is not echoed: a mistyped command line may start with a URL and its password.
    io.stderr.write(
      first.startsWith('-')
        ? `keyhook: unknown option; run keyhook --help for usage\n`
        : `keyhook: unknown command; the commands are ${COMMANDS.map((c) => c.name).join(', ')} (keyhook --help)\n`,
    );
    return EXIT_USAGE;
  }
  if (rest.includes('-h') || rest.includes('--help')) {
    io.stdout.write(command.help);
    return EXIT_OK;
  }
  try {
    await command.run(rest, io);
    return EXIT_OK;
  } catch (error) {
    // redact() again here: whatever a command let through, no URL password reaches the terminal.
    const reason = redact(describeError(error));
    if (error instanceof UsageError) {
      io.stderr.write(`keyhook ${command.name}: ${reason} (keyhook ${command.name} --help)\n`);
      return EXIT_USAGE;
    }
    io.stderr.write(`keyhook ${command.name}: ${reason}\n`);
    return EXIT_FAILURE;
  }
}
