// `user:password@`, wherever it appears in a message: after `scheme://` (a URL), after `scheme:`
// or `scheme:/` (`postgres:/u:pw@host`, which a parser may still read as a URL), or alone.
const CREDENTIALS = /([a-z][a-z0-9+.-]*:\/{0,2}[^\s:/?#@]*|[^\s:/?#@]+):[^\s@/]*@/gi;

/** Replaces each secret, and the password of any `user:password@`, with `***`. */
export function redact(text: string, secrets: readonly string[] = []): string {
  let out = text.replace(CREDENTIALS, '$1:***@');
  for (const secret of secrets) if (secret.length > 0) out = out.split(secret).join('***');
  return out;
}

/**
 * One line saying why an error happened: its first line, without the `keyhook: ` the stores put
 * in front (the CLI names the command instead), followed by its cause when the message alone is
 * too general (`PostgreSQL is unreachable.` says nothing of the refused port).
 */
export function describeError(error: unknown): string {
  const message = withoutPrefix(firstLine(error));
  const cause =
    error instanceof Error && error.cause !== undefined ? withoutPrefix(firstLine(error.cause)) : '';
  return cause && !message.includes(cause) ? `${message} (${cause})` : message;
}

function withoutPrefix(line: string): string {
  return line.replace(/^keyhook: /, '');
}

function firstLine(error: unknown): string {
  if (error instanceof AggregateError && error.message === '' && error.errors.length > 0) {
    return firstLine(error.errors[0]);
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return error.message.split('\n')[0]!.trim() || (typeof code === 'string' ? code : error.name);
  }
  return String(error);
}
