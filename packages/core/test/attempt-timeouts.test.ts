import { TestReceiver } from '@keyhook/testing/support';
import { afterEach, describe, expect, it } from 'vitest';
import { attemptError, WebhookSender } from '../src/delivery/sender.js';

/**
 * docs/decisions.md §8.5: a receiver too slow for the attempt's deadline reads one way in the
 * attempt log, whichever timer noticed it, the attempt's own or undici's.
 */
describe('an attempt that runs out of time', () => {
  let receiver: TestReceiver | undefined;
  let sender: WebhookSender | undefined;
  afterEach(async () => {
    sender?.close();
    await receiver?.close();
  });

  it.each(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])(
    'undici’s %s reads as the deadline does',
    (code) => {
      const error = Object.assign(new Error('Headers Timeout Error'), { code });
      expect(attemptError(error, false, 10_000)).toBe('timed out after 10000 ms');
    },
  );

  it('other failures keep their code and message', () => {
    const error = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    expect(attemptError(error, false, 10_000)).toBe('connect ECONNREFUSED 127.0.0.1:9');
    expect(attemptError(new Error('other side closed'), true, 250)).toBe('timed out after 250 ms');
  });

  it('a receiver that never answers is logged as timed out, every time', async () => {
    receiver = await TestReceiver.start();
    receiver.on('/hang', () => {}); // never answers
    sender = new WebhookSender({ timeoutMs: 200, policy: { allowHttp: true, allowPrivateAddresses: true } });
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, n) =>
        sender!.send({
          url: receiver!.url('/hang'),
          payload: '{}',
          eventId: `evt_${n}`,
          secret: 'whsec_dGVzdHNlY3JldHRlc3RzZWNyZXR0ZXN0c2VjcmV0',
          unixSeconds: Math.floor(Date.now() / 1000),
        }),
      ),
    );
    for (const outcome of outcomes) {
      expect(outcome.result).toEqual({ kind: 'error', message: 'timed out after 200 ms' });
    }
  });
});
