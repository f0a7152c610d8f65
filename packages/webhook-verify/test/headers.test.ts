import { DEFAULT_TOLERANCE_SECONDS, EVENT_ID_HEADER, SIGNATURE_HEADER } from '@keyhook/webhook-verify';
import { expect, it } from 'vitest';

it('names the delivery headers of docs/http-api.md §6.3 and the tolerance of docs/http-api.md §8', () => {
  expect(SIGNATURE_HEADER).toBe('x-chatbot-signature');
  expect(EVENT_ID_HEADER).toBe('x-chatbot-event-id');
  expect(DEFAULT_TOLERANCE_SECONDS).toBe(300);
});
