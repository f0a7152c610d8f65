import { DEFAULT_TOLERANCE_SECONDS, EVENT_ID_HEADER, SIGNATURE_HEADER } from '@keyhook/webhook-verify';
import { expect, it } from 'vitest';

it('defaults to keyhook’s own header names (docs/decisions.md §6.6) and the tolerance of docs/http-api.md §6.4 rule 3', () => {
  expect(SIGNATURE_HEADER).toBe('keyhook-signature');
  expect(EVENT_ID_HEADER).toBe('keyhook-event-id');
  expect(DEFAULT_TOLERANCE_SECONDS).toBe(300);
});
