import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  type DeliveryHeaders,
  VERIFICATION_ERROR_CODES,
  type VerifyOptions,
  verify,
  verifyAsync,
  verifySignature,
  type WebhookEvent,
  type WebhookSecret,
  type WebhookVerificationErrorCode,
} from '@keyhook/webhook-verify';
import { verifyAsync as verifyAsyncWeb } from '@keyhook/webhook-verify/web';
import { describe, expect, it } from 'vitest';

interface Signature {
  secret: string;
  t: string;
  body?: string;
  bodyBase64?: string;
  v1: string;
}

type BodyForm = 'string' | 'bytes' | 'latin1-string';

interface Vector {
  name: string;
  body?: string;
  bodyBase64?: string;
  bodyAs?: BodyForm;
  header: string;
  secret: string | string[];
  toleranceSeconds?: number;
  /** Given: verify gets the whole headers, this as the event-id header beside the signature. */
  eventIdHeader?: string;
  signatures: Signature[];
  expect: 'ok' | WebhookVerificationErrorCode;
}

const file = JSON.parse(readFileSync(new URL('./vectors.json', import.meta.url), 'utf8')) as {
  now: number;
  vectors: Vector[];
};
// The header names the file's description gives (the reference server's), passed as a host would.
const NAMES = { signature: 'x-chatbot-signature', eventId: 'x-chatbot-event-id' };

const bytesOf = (item: { body?: string; bodyBase64?: string }): Buffer =>
  item.bodyBase64 === undefined
    ? Buffer.from(item.body ?? '', 'utf8')
    : Buffer.from(item.bodyBase64, 'base64');

/** What reaches verify for one form of the body. */
function delivered(vector: Vector, form: BodyForm): string | Uint8Array {
  if (form === 'bytes' || vector.bodyBase64 !== undefined) return new Uint8Array(bytesOf(vector));
  // The classic receiver bug: UTF-8 bytes turned into a string one byte per character.
  if (form === 'latin1-string') return bytesOf(vector).toString('latin1');
  return vector.body ?? '';
}

function formsOf(vector: Vector): BodyForm[] {
  if (vector.bodyAs !== undefined) return [vector.bodyAs];
  return vector.bodyBase64 === undefined ? ['string', 'bytes'] : ['bytes'];
}

/**
 * Checks a vector without the package: every listed v1 is recomputed with createHmac, and the
 * expected outcome is re-derived from those genuine signatures, the secrets and the clock.
 */
function problemsOf(vector: Vector): string[] {
  const problems: string[] = [];
  const compact = vector.header.replace(/[ \t]/g, '').toLowerCase();
  for (const signature of vector.signatures) {
    const recomputed = createHmac('sha256', Buffer.from(signature.secret, 'utf8'))
      .update(Buffer.from(`${signature.t}.`, 'ascii'))
      .update(
        signature.body === undefined && signature.bodyBase64 === undefined
          ? bytesOf(vector)
          : bytesOf(signature),
      )
      .digest('hex');
    if (recomputed !== signature.v1) problems.push(`v1 ${signature.v1} is not the HMAC it claims to be`);
    if (!compact.includes(`v1=${signature.v1}`))
      problems.push(`the header does not carry v1 ${signature.v1}`);
  }
  if (vector.expect === 'malformed_header' || vector.expect === 'missing_signature') return problems;

  const secrets = typeof vector.secret === 'string' ? [vector.secret] : vector.secret;
  const t = /(?:^|,)t=(\d+)(?:,|$)/.exec(compact)?.[1];
  for (const form of formsOf(vector)) {
    const body = Buffer.from(delivered(vector, form));
    const genuine = vector.signatures.some(
      (s) =>
        s.t === t &&
        secrets.includes(s.secret) &&
        body.equals(s.body === undefined && s.bodyBase64 === undefined ? bytesOf(vector) : bytesOf(s)),
    );
    if (genuine !== (vector.expect !== 'signature_mismatch')) {
      problems.push(
        `${form}: a genuine signature is ${genuine ? '' : 'not '}present, yet expect is ${vector.expect}`,
      );
    }
  }
  if (vector.expect === 'signature_mismatch') return problems;
  const inside = Math.abs(file.now - Number(t)) <= (vector.toleranceSeconds ?? 300);
  if (inside !== (vector.expect !== 'timestamp_out_of_tolerance')) {
    problems.push(`t=${t} is ${inside ? 'inside' : 'outside'} the tolerance, yet expect is ${vector.expect}`);
  }
  if (vector.expect === 'timestamp_out_of_tolerance' || vector.expect === 'invalid_payload') return problems;
  const signedId = (JSON.parse(bytesOf(vector).toString('utf8')) as { id: string }).id;
  const idDiffers = vector.eventIdHeader !== undefined && vector.eventIdHeader !== signedId;
  if (idDiffers !== (vector.expect === 'event_id_mismatch')) {
    problems.push(
      `the event-id header ${idDiffers ? 'differs from' : 'is'} the signed id, yet expect is ${vector.expect}`,
    );
  }
  return problems;
}

describe('vectors.json, checked by an independent HMAC computation', () => {
  it('covers every error code and the cases the issue lists', () => {
    const expected = new Set(file.vectors.map((vector) => vector.expect));
    for (const code of ['ok', ...VERIFICATION_ERROR_CODES]) expect(expected).toContain(code);
    const names = file.vectors.map((vector) => vector.name).join('\n');
    for (const topic of [
      'valid',
      'tampered body',
      'expired',
      'future',
      't not first',
      'several v1',
      'missing t',
    ]) {
      expect(names).toContain(topic);
    }
    for (const topic of [
      't=Infinity',
      'numeric signature',
      'whitespace',
      'wrong secret',
      'second right',
      'unicode',
    ]) {
      expect(names).toContain(topic);
    }
  });

  it.each(file.vectors)('$name', (vector) => {
    expect(problemsOf(vector)).toEqual([]);
  });

  it('catches a wrong vectors file: a flipped v1, a false expectation, a t outside the window', () => {
    const valid = file.vectors.find((vector) => vector.name === 'valid')!;
    const signature = valid.signatures[0]!;
    const flipped = `${signature.v1.slice(0, -1)}${signature.v1.endsWith('0') ? '1' : '0'}`;
    const wrongV1 = {
      ...valid,
      header: valid.header.replace(signature.v1, flipped),
      signatures: [{ ...signature, v1: flipped }],
    };
    expect(problemsOf(wrongV1)).not.toEqual([]);
    const tamper = file.vectors.find((vector) => vector.name === 'tampered body: one byte changed')!;
    expect(problemsOf({ ...tamper, expect: 'ok' })).not.toEqual([]);
    const expired = file.vectors.find((vector) => vector.name === 'expired: 301 s in the past')!;
    expect(problemsOf({ ...expired, expect: 'ok' })).not.toEqual([]);
    expect(problemsOf({ ...valid, eventIdHeader: 'evt_other' })).not.toEqual([]);
  });
});

type Verifier = (
  body: string | Uint8Array,
  header: DeliveryHeaders,
  secret: WebhookSecret,
  options: VerifyOptions,
) => Promise<WebhookEvent>;

const verifiers: [string, Verifier][] = [
  ['verify (node:crypto)', async (...args) => verify(...args)],
  ['verifyAsync (WebCrypto)', verifyAsync],
  ['verifyAsync from ./web', verifyAsyncWeb],
];

const cases = file.vectors.flatMap((vector) =>
  formsOf(vector).map((form) => ({ ...vector, form, label: `${vector.name} [${form}]` })),
);

describe.each(verifiers)('%s against vectors.json', (_name, run) => {
  it.each(cases)('$label → $expect', async (vector) => {
    const options = { now: file.now * 1000, toleranceSeconds: vector.toleranceSeconds, headers: NAMES };
    const headers =
      vector.eventIdHeader === undefined
        ? vector.header
        : { [NAMES.signature]: vector.header, [NAMES.eventId]: vector.eventIdHeader };
    const outcome = run(delivered(vector, vector.form), headers, vector.secret, options);
    if (vector.expect === 'ok') {
      const event = await outcome;
      const sent = JSON.parse(bytesOf(vector).toString('utf8')) as WebhookEvent;
      expect(event).toEqual(sent);
    } else {
      await expect(outcome).rejects.toMatchObject({ name: 'WebhookVerificationError', code: vector.expect });
    }
  });
});

describe('verifySignature (no event parse) against vectors.json', () => {
  it.each(cases)('$label → $expect, or ok where only the body or the event-id header is wrong', (vector) => {
    const options = { now: file.now * 1000, toleranceSeconds: vector.toleranceSeconds };
    const check = () =>
      verifySignature(delivered(vector, vector.form), vector.header, vector.secret, options);
    if (['ok', 'invalid_payload', 'event_id_mismatch'].includes(vector.expect)) expect(check).not.toThrow();
    else expect(check).toThrow(expect.objectContaining({ code: vector.expect }));
  });
});
