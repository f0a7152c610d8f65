import type { RequestHeaders } from './messages.js';

/** The first value of a header, matched case-insensitively. */
export function header(headers: RequestHeaders, name: string): string | undefined {
  let value = headers[name];
  const lower = value === undefined ? name.toLowerCase() : name;
  if (value === undefined) value = headers[lower];
  if (value === undefined) {
    for (const key of Object.keys(headers)) {
      if (key.toLowerCase() === lower) {
        value = headers[key];
        break;
      }
    }
  }
  return Array.isArray(value) ? value[0] : value;
}

/** The token of `Authorization: Bearer <token>`, or undefined when there is none. */
export function bearerToken(headers: RequestHeaders): string | undefined {
  const value = header(headers, 'authorization');
  if (!value) return undefined;
  // The usual spelling, without a regex on the hot path; every other spelling goes through it.
  if (
    value.startsWith('Bearer ') &&
    value.length > 7 &&
    value.indexOf(' ', 7) === -1 &&
    value.indexOf('\t') === -1
  ) {
    return value.slice(7);
  }
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(value);
  return match?.[1];
}
