/** Timestamps are INTEGER epoch milliseconds in every table; NULL stays null both ways. */
export const toMillis = (date: Date | null): number | null => (date === null ? null : date.getTime());
export const toDate = (millis: number | null): Date | null => (millis === null ? null : new Date(millis));
