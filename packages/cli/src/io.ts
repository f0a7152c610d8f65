/** Where a command writes and what it reads, passed in so tests can run the program in-process. */
export interface Io {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Readonly<Record<string, string | undefined>>;
}

/** Bad usage (a missing or unknown option): exit code 2, and a pointer to the command's help. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** One command of the program: its help, and what it does with its own arguments. */
export interface Command {
  name: string;
  /** One line, for `keyhook --help`. */
  summary: string;
  /** The whole text `keyhook <name> --help` prints. */
  help: string;
  /** Throws a UsageError for bad usage, anything else for a failure. */
  run(args: string[], io: Io): Promise<void>;
}
