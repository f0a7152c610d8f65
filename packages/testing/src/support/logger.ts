import type { Logger } from '@keyhook/core';

export interface LoggedLine {
  level: 'info' | 'warn' | 'error';
  context: Record<string, unknown>;
  message: string;
}

/** A Logger that keeps every line, for tests that check what was logged. */
export function recordingLogger(): Logger & { lines: LoggedLine[] } {
  const lines: LoggedLine[] = [];
  const at =
    (level: LoggedLine['level']) =>
    (context: object, message: string): void => {
      lines.push({ level, context: context as Record<string, unknown>, message });
    };
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * The lines a store logs while it applies `applied`: a start and an end with the duration, each
 * with `context` (the store's `{ schema }` or `{ filename }`) and the migration's version and name.
 */
export function migrationLogLines(
  applied: readonly { version: number; name: string; durationMs: number }[],
  context: Record<string, unknown>,
): LoggedLine[] {
  return applied.flatMap((m) => [
    {
      level: 'info' as const,
      context: { ...context, version: m.version, name: m.name },
      message: `applying migration ${m.name}`,
    },
    {
      level: 'info' as const,
      context: { ...context, version: m.version, name: m.name, durationMs: m.durationMs },
      message: `applied migration ${m.name} in ${m.durationMs} ms`,
    },
  ]);
}
