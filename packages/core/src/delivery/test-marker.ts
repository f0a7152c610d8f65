/** The ids of test events (`POST /admin/webhooks/{id}/test`) begin so, and no other's may (docs/decisions.md §8.16). */
export const TEST_EVENT_PREFIX = 'evt_test_';

/** Whether an event id is a test event's: what the delivery views' `test` says. */
export function isTestEventId(id: string): boolean {
  return id.startsWith(TEST_EVENT_PREFIX);
}
