import { z } from 'zod';
import { type ErrorDetail, KeyhookError } from './errors.js';

/**
 * Parses with a zod schema, or throws 400 `validation_failed` with one detail per issue. Public,
 * with `validationFailed`, so a host's own routes refuse input with keyhook's envelope.
 */
export function parseOrThrow<Schema extends z.ZodType>(schema: Schema, input: unknown): z.output<Schema> {
  const result = schema.safeParse(input, { error: inPlainWords });
  if (result.success) return result.data;
  throw validationFailed(
    result.error.issues.flatMap((issue) =>
      issue.code === 'unrecognized_keys'
        ? issue.keys.map((key) => ({
            path: [...issue.path, key].map(String).join('.'),
            message: 'is not a field this takes',
          }))
        : [{ path: issue.path.map(String).join('.'), message: issue.message }],
    ),
  );
}

const ARTICLE: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
  null: 'null',
};

/**
 * zod's issues said as the field's predicate (docs/decisions.md §1.11): "is required", "must not
 * be empty", "must be at most 200 characters". A schema's own message wins over these.
 */
function inPlainWords(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined
        ? 'is required'
        : `must be ${ARTICLE[issue.expected] ?? issue.expected}`;
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'string')
        return min <= 1 ? 'must not be empty' : `must be at least ${min} characters`;
      if (issue.origin === 'array' || issue.origin === 'set')
        return min <= 1 ? 'must name at least one' : `must name at least ${min}`;
      return `must be at least ${min}`;
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'string') return `must be at most ${max} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must name at most ${max}`;
      return `must be at most ${max}`;
    }
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'invalid_format':
      if (issue.format === 'datetime')
        return 'must be an RFC 3339 time with an offset, as 2026-12-06T12:00:00Z';
      return `must be a valid ${issue.format}`;
    default:
      return undefined;
  }
}

export function validationFailed(details: ErrorDetail[]): KeyhookError {
  const summary = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');
  return new KeyhookError('validation_failed', `The request is invalid: ${summary}`, { details });
}

/**
 * U+0000, which Postgres text cannot hold, or a UTF-16 surrogate without its pair, which UTF-8
 * cannot encode (a store would keep U+FFFD in its place, so what was stored would differ from what
 * was answered).
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is exactly what this refuses.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** What a refused string is told. */
export const UNSTORABLE_TEXT_MESSAGE = 'must not contain U+0000 or an unpaired surrogate';

/** Whether every store keeps `text` exactly: no U+0000 and no unpaired surrogate. */
export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

// C0 controls but tab and newline, DEL, and the bidirectional embeddings, overrides and isolates
// (U+202A–U+202E, U+2066–U+2069), which make a name read otherwise than it is.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what this refuses.
const MISLEADING = /[\u0000-\u0008\u000b-\u001f\u007f\u202a-\u202e\u2066-\u2069]/;

/** What a refused name is told. */
export const MISLEADING_TEXT_MESSAGE =
  'must not contain control characters (other than tab and newline) or bidirectional overrides';

/**
 * `storableText()` for a name people read (a key's name): it also refuses what would render it
 * misleadingly, control characters and bidirectional overrides (docs/decisions.md §1.5).
 */
export function readableText(): z.ZodString {
  return storableText().refine((text) => !MISLEADING.test(text), MISLEADING_TEXT_MESSAGE);
}

/**
 * `z.string()` for a field every store keeps as it came: the same rule on SQLite and on
 * Postgres, so a value refused on one is refused on all (400 `validation_failed`, naming the
 * field). Chain the field's other rules after it, `storableText().trim().max(200)`, or pass a
 * string schema of your own, `storableText(z.url().max(2048))`. Public because a host's own
 * fields kept in the same database meet the same limits (docs/decisions.md §1.5).
 */
export function storableText(): z.ZodString;
export function storableText<Schema extends z.ZodType<string>>(schema: Schema): Schema;
export function storableText(schema: z.ZodType<string> = z.string()): z.ZodType<string> {
  return schema.refine(isStorableText, UNSTORABLE_TEXT_MESSAGE);
}
