import { type ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from './io.js';

type Options = NonNullable<ParseArgsConfig['options']>;
type Values<T extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; strict: true; allowPositionals: true }>
>['values'];

/**
 * Parses a command's options strictly. Its errors become usage errors, and a stray argument is
 * reported without being echoed: it may be a URL with a password that was meant for an option.
 */
export function parseOptions<const T extends Options>(args: string[], options: T, hint: string): Values<T> {
  try {
    const { values, positionals } = parseArgs({ args, options, strict: true, allowPositionals: true });
    if (positionals.length > 0) {
      throw new UsageError(`unexpected argument: this command takes options only (${hint})`);
    }
    return values;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // Node's advice on `--` is about positional arguments, which no command takes.
    if (isParseArgsError(error)) {
      throw new UsageError(
        error.message.split('\n')[0]!.replace(/\. To specify a positional argument.*$/, ''),
      );
    }
    throw error;
  }
}

function isParseArgsError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}
