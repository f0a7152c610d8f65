import type { z } from 'zod';
import { type ErrorDetail, KeyhookError } from './errors.js';

/** Parses with a zod schema, or throws 400 `validation_failed` with one detail per issue. */
export function parseOrThrow<Schema extends z.ZodType>(schema: Schema, input: unknown): z.output<Schema> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw validationFailed(
    result.error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message })),
  );
}

export function validationFailed(details: ErrorDetail[]): KeyhookError {
  const summary = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');
  return new KeyhookError('validation_failed', `The request is invalid: ${summary}`, { details });
}
