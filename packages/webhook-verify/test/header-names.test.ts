import {
  type DeliveryHeaders,
  type VerifyOptions,
  verify,
  verifyAsync,
  verifyRequest,
  verifySignature,
} from '@keyhook/webhook-verify';
import { describe, expect, it } from 'vitest';
import { eventBody, nowSeconds, SECRET, signatureHeader } from './wire-format.js';

const body = eventBody({ invoiceId: 'inv_1' }, 'evt_names_1');
const header = signatureHeader(body);
const ACME = { signature: 'x-acme-signature', eventId: 'x-acme-event-id' };

type Run = (headers: DeliveryHeaders, options?: VerifyOptions) => Promise<unknown>;
const runners: [string, Run][] = [
  ['verify', async (headers, options) => verify(body, headers, SECRET, options)],
  ['verifyAsync', (headers, options) => verifyAsync(body, headers, SECRET, options)],
];

describe.each(runners)('%s with whole headers', (_name, run) => {
  it('reads the default two headers from Node’s headers by default', async () => {
    await expect(
      run({ 'keyhook-signature': header, 'keyhook-event-id': 'evt_names_1', host: 'receiver' }),
    ).resolves.toMatchObject({ id: 'evt_names_1' });
  });

  it('reads the sender’s own header names from options.headers, in any case', async () => {
    const headers = { 'x-acme-signature': header, 'x-acme-event-id': 'evt_names_1' };
    await expect(run(headers, { headers: ACME })).resolves.toMatchObject({ id: 'evt_names_1' });
    const upper = { signature: 'X-Acme-Signature', eventId: 'X-ACME-EVENT-ID' };
    await expect(run(headers, { headers: upper })).resolves.toMatchObject({ id: 'evt_names_1' });
    // Without the option the default name is looked for, and the error names it.
    await expect(run(headers)).rejects.toMatchObject({
      code: 'missing_signature',
      message: 'the keyhook-signature header is missing',
    });
  });

  it('names the configured header in its errors', async () => {
    await expect(run({}, { headers: ACME })).rejects.toMatchObject({
      code: 'missing_signature',
      message: 'the x-acme-signature header is missing',
    });
    await expect(run({ 'x-acme-signature': 't=1' }, { headers: ACME })).rejects.toMatchObject({
      code: 'malformed_header',
      message: expect.stringMatching(/^the x-acme-signature header is malformed/),
    });
    await expect(run('t=1', { headers: ACME })).rejects.toMatchObject({
      message: expect.stringMatching(/^the x-acme-signature header is malformed/),
    });
  });

  it('refuses an event-id header that is not the signed id, after the signature and time checks', async () => {
    const headers = { 'x-acme-signature': header, 'x-acme-event-id': 'evt_someone_else' };
    await expect(run(headers, { headers: ACME })).rejects.toMatchObject({
      code: 'event_id_mismatch',
      message: 'the x-acme-event-id header is not the id of the signed event',
    });
    // A forged delivery is a signature_mismatch whatever its event-id header says.
    const forged = { 'x-acme-signature': signatureHeader(`${body} `), 'x-acme-event-id': 'evt_x' };
    await expect(run(forged, { headers: ACME })).rejects.toMatchObject({ code: 'signature_mismatch' });
    // A stale delivery is refused for its age first, whatever its event-id header says.
    const stale = {
      'x-acme-signature': signatureHeader(body, SECRET, nowSeconds() - 301),
      'x-acme-event-id': 'evt_x',
    };
    await expect(run(stale, { headers: ACME })).rejects.toMatchObject({ code: 'timestamp_out_of_tolerance' });
    // Repeated event-id headers are not one id.
    const repeated = { 'x-acme-signature': header, 'x-acme-event-id': ['evt_names_1', 'evt_names_1'] };
    await expect(run(repeated, { headers: ACME })).rejects.toMatchObject({ code: 'event_id_mismatch' });
  });

  it('accepts a delivery without the event-id header: the signed body’s id is the id', async () => {
    await expect(run({ 'keyhook-signature': header })).resolves.toMatchObject({ id: 'evt_names_1' });
  });

  it('takes a Fetch Headers, and a hand-built record in any spelling', async () => {
    const fetchHeaders = new Headers({ 'X-Acme-Signature': header, 'X-Acme-Event-Id': 'evt_names_1' });
    await expect(run(fetchHeaders, { headers: ACME })).resolves.toMatchObject({ id: 'evt_names_1' });
    const record = { 'Keyhook-Signature': header, 'Keyhook-Event-Id': 'evt_other' };
    await expect(run(record)).rejects.toMatchObject({ code: 'event_id_mismatch' });
  });

  it('never reads an inherited property as a header', async () => {
    // `constructor` is a valid header name, and every plain object inherits one.
    await expect(run({}, { headers: { signature: 'constructor' } })).rejects.toMatchObject({
      code: 'missing_signature',
    });
  });

  it('throws a TypeError for header names that cannot be, or are the same header twice', async () => {
    for (const headers of [
      { signature: '' },
      { signature: 'x acme' },
      { eventId: 'x-acme:id' },
      { signature: 42 as unknown as string },
      { signature: 'x-acme', eventId: 'X-ACME' },
      'x-acme-signature' as unknown as VerifyOptions['headers'],
    ]) {
      await expect(run({ 'keyhook-signature': header }, { headers })).rejects.toThrow(TypeError);
    }
  });
});

describe('verifySignature with whole headers', () => {
  it('reads the configured signature header and leaves the event id to the caller', () => {
    const headers = { 'x-acme-signature': header, 'x-acme-event-id': 'evt_someone_else' };
    expect(() => verifySignature(body, headers, SECRET, { headers: ACME })).not.toThrow();
    expect(() => verifySignature(`${body} `, headers, SECRET, { headers: ACME })).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });
});

describe('verifyRequest with header names of the sender’s own', () => {
  const request = (headers: Record<string, string>) =>
    new Request('https://receiver.example/hooks', { method: 'POST', headers, body });

  it('reads both headers by the configured names', async () => {
    const event = await verifyRequest(
      request({ 'x-acme-signature': header, 'x-acme-event-id': 'evt_names_1' }),
      SECRET,
      { headers: ACME },
    );
    expect(event.id).toBe('evt_names_1');
    await expect(
      verifyRequest(request({ 'x-acme-signature': header, 'x-acme-event-id': 'evt_2' }), SECRET, {
        headers: ACME,
      }),
    ).rejects.toMatchObject({ code: 'event_id_mismatch' });
    await expect(verifyRequest(request({ 'x-acme-signature': header }), SECRET)).rejects.toMatchObject({
      code: 'missing_signature',
    });
  });
});
