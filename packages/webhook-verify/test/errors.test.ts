import {
  isWebhookVerificationError,
  VERIFICATION_ERROR_CODES,
  verify,
  WebhookVerificationError,
} from '@keyhook/webhook-verify';
import * as web from '@keyhook/webhook-verify/web';
import { describe, expect, it } from 'vitest';
import { eventBody, hmacHex, OTHER_SECRET, SECRET, signatureHeader } from './wire-format.js';

const caught = async (action: () => unknown): Promise<unknown> => {
  try {
    await action();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
};

describe('WebhookVerificationError', () => {
  it('has a name, a code from the closed list and a message', () => {
    const error = new WebhookVerificationError('signature_mismatch', 'no match');
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('WebhookVerificationError');
    expect(error.code).toBe('signature_mismatch');
    expect(VERIFICATION_ERROR_CODES).toEqual([
      'missing_signature',
      'malformed_header',
      'signature_mismatch',
      'timestamp_out_of_tolerance',
      'invalid_payload',
      'event_id_mismatch',
    ]);
  });

  it('is recognised by isWebhookVerificationError from either entry, and nothing else is', async () => {
    const fromNode = await caught(() => verify(eventBody(), undefined, SECRET));
    const fromWeb = await caught(() => web.verifyAsync(eventBody(), 't=1', SECRET));
    for (const check of [isWebhookVerificationError, web.isWebhookVerificationError]) {
      expect(check(fromNode)).toBe(true);
      expect(check(fromWeb)).toBe(true);
      for (const other of [new Error('x'), new TypeError('x'), { code: 'signature_mismatch' }, null, 'x']) {
        expect(check(other)).toBe(false);
      }
    }
  });

  it('recognises an error from another copy of the package by its registered brand', () => {
    const foreign = Object.assign(new Error('x'), { [Symbol.for('keyhook.webhook-verify.error')]: true });
    expect(isWebhookVerificationError(foreign)).toBe(true);
  });

  it('never puts a secret or the expected signature in a message', async () => {
    const body = eventBody();
    const header = signatureHeader(body, OTHER_SECRET);
    const error = (await caught(() =>
      verify(body, header, [SECRET, OTHER_SECRET.slice(0, -1) + 'x']),
    )) as Error;
    expect(error).toMatchObject({ code: 'signature_mismatch' });
    const t = header.slice(2, header.indexOf(','));
    for (const secret of [SECRET, OTHER_SECRET]) {
      expect(error.message).not.toContain(secret.slice(6, 20));
      expect(error.message).not.toContain(hmacHex(secret, t, body).slice(0, 16));
    }
  });

  it('keeps the JSON error as the cause of invalid_payload', async () => {
    const body = '{"id":';
    const error = (await caught(() => verify(body, signatureHeader(body), SECRET))) as Error;
    expect(error).toMatchObject({ code: 'invalid_payload' });
    expect(error.cause).toBeInstanceOf(SyntaxError);
  });
});
