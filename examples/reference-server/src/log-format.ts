import type { LoggerOption } from './log-redaction.js';
import { redactLine } from './log-redaction.js';

/** Where lines go: `process.stdout`, or a test's capture. */
export interface LineSink {
  write(text: string): unknown;
}

/**
 * The process's one logger (data-plane.md §7.5), as `buildServer`'s `logger` option; the
 * same pino goes to keyhook, the stores and the data plane. Production: pino's JSON lines.
 * Otherwise: `readableLines` on stdout, which is written synchronously, so the lines and the
 * banner `main.ts` prints come out in the order they were made.
 */
export function processLogger(production: boolean, out: LineSink = process.stdout): LoggerOption {
  return production ? { level: 'info' } : { level: 'info', stream: readableLines(out) };
}

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO ',
  40: 'WARN ',
  50: 'ERROR',
  60: 'FATAL',
};
/** pino's own fields, said by the time and level, or of no use on a developer's screen. */
const OWN = new Set(['level', 'time', 'pid', 'hostname', 'msg']);

/**
 * A pino destination for development: each JSON line pino writes (already redacted by
 * `withLogRedaction`) becomes one readable line, `12:00:01 INFO  applied migration 0001_api_keys
 * in 3 ms`, then the context as `key=value`. A field whose value the message already states, as a
 * whole word, is left out; objects are compact JSON; an error's stack follows an `error` line,
 * indented. The line is redacted once more, as rendered, since unescaping JSON can make a
 * credential-shaped text that the JSON line did not have.
 *
 * Migrations applied one after another become one line, naming the first and the last, so a first
 * start keeps the banner on the first screen however many migrations there are. The line is
 * written when the next line comes (the server's "listening", or a failure).
 */
export function readableLines(out: LineSink): { write(line: string): void } {
  let applied: { first: string; last: string; count: number; ms: number; at: string } | null = null;
  const flush = () => {
    if (applied === null) return;
    const { first, last, count, ms, at } = applied;
    const names = count === 1 ? first : `${first} … ${last}`;
    out.write(
      `${at} INFO  applied ${count === 1 ? 'migration' : `${count} migrations`} ${names} in ${ms} ms\n`,
    );
    applied = null;
  };
  return {
    write(line) {
      const rendered = renderLine(line);
      const migration = APPLIED_MIGRATION.exec(rendered);
      if (migration === null) {
        flush();
        out.write(`${rendered}\n`);
        return;
      }
      const [, at, name, ms] = migration as unknown as [string, string, string, string];
      if (applied === null) applied = { first: name, last: name, count: 1, ms: Number(ms), at };
      else Object.assign(applied, { last: name, count: applied.count + 1, ms: applied.ms + Number(ms) });
    },
  };
}

/** A rendered "applied migration" line, with nothing after it: its time, name and duration. */
const APPLIED_MIGRATION = /^(\d\d:\d\d:\d\d) INFO {2}applied migration (\w+) in (\d+) ms$/;

/** One JSON line as a readable one; a line that is not a JSON object passes as it is. */
export function renderLine(json: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json);
  } catch {
    return redactLine(json.trimEnd());
  }
  if (typeof entry !== 'object' || entry === null) return redactLine(json.trimEnd());
  const time = new Date(typeof entry.time === 'number' ? entry.time : Date.now());
  const level = typeof entry.level === 'number' ? (LEVELS[entry.level] ?? `L${entry.level}`) : 'INFO ';
  const message = oneLine(typeof entry.msg === 'string' ? entry.msg : '');
  const parts = [`${clock(time)} ${level} ${message}`];
  let stack: string | undefined;
  for (const [key, value] of Object.entries(entry)) {
    if (OWN.has(key) || value === undefined || states(message, value)) continue;
    if (isError(value)) {
      parts.push(`${key}=${text(value.type ? `${value.type}: ${value.message}` : value.message)}`);
      if ((entry.level as number) >= 50) stack ??= value.stack;
      continue;
    }
    parts.push(`${key}=${text(value)}`);
  }
  const rendered = parts.join(' ');
  const trace =
    stack
      ?.split('\n')
      .slice(1)
      .map((frame) => `    ${frame.trim()}`) ?? [];
  return redactLine([rendered, ...trace].join('\n'));
}

/** `HH:MM:SS`, local time: what a developer reads beside their clock. */
function clock(time: Date): string {
  return [time.getHours(), time.getMinutes(), time.getSeconds()]
    .map((part) => String(part).padStart(2, '0'))
    .join(':');
}

/** A string, number or boolean the message already says as a whole word (`0001_api_keys`, `3` of `in 3 ms`). */
function states(message: string, value: unknown): boolean {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return false;
  const said = String(value);
  if (said === '') return false;
  for (let at = message.indexOf(said); at !== -1; at = message.indexOf(said, at + 1)) {
    if (!isWordChar(message[at - 1]) && !isWordChar(message[at + said.length])) return true;
  }
  return false;
}

function isWordChar(char: string | undefined): boolean {
  return char !== undefined && /[\w-]/.test(char);
}

/** A plain word as it is; anything with a space, a quote or an `=` quoted; objects as compact JSON. */
function text(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=\\]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'object' && value !== null) return JSON.stringify(value);
  return String(value);
}

function oneLine(message: string): string {
  return message.replace(/\r?\n/g, '\\n');
}

/** pino's `err` serialiser: `{ type, message, stack }`. */
function isError(value: unknown): value is { type?: string; message: string; stack?: string } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { message?: unknown }).message === 'string' &&
    typeof (value as { stack?: unknown }).stack === 'string'
  );
}
