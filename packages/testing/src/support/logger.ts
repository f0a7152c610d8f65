import type { Logger } from '@keyhook/core';

export interface LoggedLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  context: Record<string, unknown>;
  message: string;
}

/** A Logger that keeps every line, `debug` included, for tests that check what was logged. */
export function recordingLogger(): Logger & { lines: LoggedLine[] } {
  const lines: LoggedLine[] = [];
  const at =
    (level: LoggedLine['level']) =>
    (context: object, message: string): void => {
      lines.push({ level, context: context as Record<string, unknown>, message });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * The lines a store logs while it applies `applied`: its start at `debug`, with `context` (the
 * store's `{ schema }` or `{ filename }`), the version, name and checksum (from `files`); then one
 * line at `info` with the name and the duration.
 */
export function migrationLogLines(
  applied: readonly { version: number; name: string; durationMs: number }[],
  context: Record<string, unknown>,
  files: readonly { version: number; checksum: string }[],
): LoggedLine[] {
  return applied.flatMap((m) => [
    {
      level: 'debug' as const,
      context: {
        ...context,
        version: m.version,
        name: m.name,
        checksum: files.find((file) => file.version === m.version)?.checksum,
      },
      message: `applying migration ${m.name}`,
    },
    {
      level: 'info' as const,
      context: { name: m.name, durationMs: m.durationMs },
      message: `applied migration ${m.name} in ${m.durationMs} ms`,
    },
  ]);
}

/**
 * What is wrong with the log of a first open that applied `names`, as `[]` when nothing is: one
 * line at `info` per migration (`applied migration <name> in <n> ms`), and its start at `debug`.
 */
export function migrationLogProblems(lines: readonly LoggedLine[], names: readonly string[]): string[] {
  const problems: string[] = [];
  const messages = lines.map((line) => line.message);
  if (lines.length !== names.length * 2)
    problems.push(`${lines.length} lines for ${names.length} migrations`);
  const infos = lines.filter((line) => line.level === 'info').length;
  if (infos !== names.length) problems.push(`${infos} info lines for ${names.length} migrations`);
  for (const name of names) {
    if (!messages.includes(`applying migration ${name}`)) problems.push(`no start line for ${name}`);
    const applied = new RegExp(`^applied migration ${name} in \\d+ ms$`);
    if (!messages.some((message) => applied.test(message))) problems.push(`no applied line for ${name}`);
  }
  return problems;
}
