import pg from 'pg';

/** pg_type oid of timestamptz. */
const TIMESTAMPTZ = 1184;

/**
 * The type parsers the store's queries run with: pg's own, but a timestamptz in the form
 * Postgres writes with DateStyle ISO (`2026-11-25 18:08:04.123456+00`, the offset as `±HH`,
 * `±HH:MM` or `±HH:MM:SS`) is read by position, not by pg's regular expressions. Every delivery
 * returns several of them, and the regular expressions were pg's costliest step in reading a
 * row. Any other form (a year before 1000 or after 9999, BC, infinity, another DateStyle) goes to
 * pg's parser, so the answer is always the one pg would give.
 */
export const STORE_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMPTZ && format !== 'binary'
      ? parseTimestamptz
      : pg.types.getTypeParser(oid, format ?? 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

const pgTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date;

/** The digits text[from..to) as a number, or -1 when one is not a digit. */
function digits(text: string, from: number, to: number): number {
  let value = 0;
  for (let i = from; i < to; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** A timestamptz as Postgres writes it with DateStyle ISO; pg's parser for any other form. */
export function parseTimestamptz(text: string): Date {
  return readIsoTimestamptz(text) ?? pgTimestamptz(text);
}

/**
 * SQL for the timestamptz `expression` holds as epoch milliseconds (a number in a statement's
 * JSON input): integer microseconds, so exact, and NULL for NULL. A JSON input carries its times
 * as numbers because JSON.stringify writes a Date through toISOString, which costs several
 * thousand instructions a call, several times a delivery.
 */
export const fromEpochMs = (expression: string): string =>
  `('epoch'::timestamptz + ${expression} * interval '1 millisecond')`;

/** A timestamptz in the ISO form of a year from 1000 to 9999, read by position; null for any other text. */
export function readIsoTimestamptz(text: string): Date | null {
  const end = text.length;
  if (
    end < 22 ||
    text.charCodeAt(4) !== 45 || // -
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 32 || // space
    text.charCodeAt(13) !== 58 || // :
    text.charCodeAt(16) !== 58
  ) {
    return null;
  }
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 7);
  const day = digits(text, 8, 10);
  const hour = digits(text, 11, 13);
  const minute = digits(text, 14, 16);
  const second = digits(text, 17, 19);
  let at = 19;
  let ms = 0;
  if (text.charCodeAt(at) === 46) {
    // .f to .ffffff: the first three digits are the milliseconds, the rest is dropped (as pg does).
    const from = at + 1;
    at = from;
    while (at < end && at - from < 6 && text.charCodeAt(at) >= 48 && text.charCodeAt(at) <= 57) at++;
    if (at === from) return null;
    ms = digits(text, from, Math.min(at, from + 3)) * 10 ** Math.max(0, 3 - (at - from));
  }
  // The offset, to the end of the text: ±HH, ±HH:MM or ±HH:MM:SS.
  const sign = text.charCodeAt(at);
  const rest = end - at - 1;
  if ((sign !== 43 && sign !== 45) || (rest !== 2 && rest !== 5 && rest !== 8)) return null;
  const colon = (i: number) => text.charCodeAt(i) === 58;
  const offsetHours = digits(text, at + 1, at + 3);
  const offsetMinutes = rest === 2 ? 0 : colon(at + 3) ? digits(text, at + 4, at + 6) : -1;
  const offsetSeconds = rest !== 8 ? 0 : colon(at + 6) ? digits(text, at + 7, at + 9) : -1;
  if (
    year < 1000 ||
    month < 1 ||
    day < 1 ||
    hour < 0 ||
    minute < 0 ||
    second < 0 ||
    offsetHours < 0 ||
    offsetMinutes < 0 ||
    offsetSeconds < 0
  ) {
    return null;
  }
  const offset = offsetHours * 3_600_000 + offsetMinutes * 60_000 + offsetSeconds * 1000;
  return new Date(
    Date.UTC(year, month - 1, day, hour, minute, second, ms) - (sign === 43 ? offset : -offset),
  );
}
