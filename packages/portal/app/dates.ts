// No timeZone option: the viewer's own zone and locale.
const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const PRECISE = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** An ISO instant as the viewer reads dates; `fallback` for null. */
export function formatDate(iso: string | null, fallback = '—'): string {
  return iso ? DATE_TIME.format(new Date(iso)) : fallback;
}

/** With seconds: for attempts, which come seconds apart. */
export function formatPreciseDate(iso: string): string {
  return PRECISE.format(new Date(iso));
}

/** A `datetime-local` input's value (local wall time, no zone) as an ISO instant, or null if empty or invalid. */
export function localInputToIso(value: string): string | null {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** An instant as a `datetime-local` input's value, in the viewer's zone. */
export function isoToLocalInput(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
