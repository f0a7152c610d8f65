/** The event kinds a webhook can subscribe to (docs/http-api.md §6.1). */
export const EVENT_TYPES = [
  'run.completed',
  'run.failed',
  'run.conflict',
  'generation.published',
  'apply.failed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && (EVENT_TYPES as readonly string[]).includes(value);
}
