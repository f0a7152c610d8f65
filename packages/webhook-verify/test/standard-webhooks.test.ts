import { createHmac } from 'node:crypto';
import {
  sign,
  signAsync,
  signEvent,
  signEventAsync,
  verify,
  verifyAsync,
  verifyRequest,
  verifySignature,
} from '@keyhook/webhook-verify';
import * as web from '@keyhook/webhook-verify/web';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { OTHER_SECRET, SECRET } from './wire-format.js';

const T = 1767225600;
const NOW = T * 1000;
const SW = { scheme: 'standard-webhooks' } as const;
type Events = { 'invoice.paid': { invoiceId: string } };
const paid = { type: 'invoice.paid' as const, data: { invoiceId: 'inv_sw' }, id: 'evt_sw_1' };

// The two libraries read Date.now() with no way to pass a time: a fixed system clock stands in.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(NOW);
});
afterEach(() => vi.useRealTimers());

const codeOf = (call: () => unknown): unknown => {
  try {
    call();
    return 'ok';
  } catch (error) {
    return (error as { code?: unknown }).code ?? error;
  }
};

describe('the Standard Webhooks published test vector (svix’s src/webhook.test.ts, as packaged)', () => {
  const vector = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    payload: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };
  const headers = {
    'webhook-id': vector.id,
    'webhook-timestamp': String(vector.timestamp),
    'webhook-signature': vector.signature,
  };
  const at = { now: vector.timestamp * 1000 };

  it('sign reproduces the published signature, with node:crypto and with WebCrypto', async () => {
    const options = { ...SW, id: vector.id, ...at };
    expect(sign(vector.payload, vector.secret, options)).toBe(vector.signature);
    expect(await signAsync(vector.payload, vector.secret, options)).toBe(vector.signature);
  });

  it('verifySignature accepts it, read from the headers present; the body is not a keyhook event', async () => {
    expect(() => verifySignature(vector.payload, headers, vector.secret, at)).not.toThrow();
    expect(codeOf(() => verify(vector.payload, headers, vector.secret, at))).toBe('invalid_payload');
    await expect(verifyAsync(vector.payload, headers, vector.secret, at)).rejects.toMatchObject({
      code: 'invalid_payload',
    });
  });

  it('refuses it with a byte changed, another id, or out of the tolerance', () => {
    expect(codeOf(() => verifySignature(`${vector.payload} `, headers, vector.secret, at))).toBe(
      'signature_mismatch',
    );
    const otherId = { ...headers, 'webhook-id': 'msg_other' };
    expect(codeOf(() => verifySignature(vector.payload, otherId, vector.secret, at))).toBe(
      'signature_mismatch',
    );
    const later = { now: (vector.timestamp + 301) * 1000 };
    expect(codeOf(() => verifySignature(vector.payload, headers, vector.secret, later))).toBe(
      'timestamp_out_of_tolerance',
    );
  });
});

describe('interop with the standardwebhooks and svix packages, with a keyhook secret (whsec_ + 64 hex)', () => {
  it('keys the HMAC with the base64 after whsec_, decoded: 48 bytes for a keyhook secret', () => {
    const key = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
    expect(key.length).toBe(48);
    const body = '{"a":1}';
    const expected = createHmac('sha256', key).update(`msg_1.${T}.${body}`).digest('base64');
    expect(sign(body, SECRET, { ...SW, id: 'msg_1', now: NOW })).toBe(`v1,${expected}`);
  });

  it('a delivery signed by standardwebhooks’ Webhook.sign verifies here, sync and async', async () => {
    const body = JSON.stringify({
      id: 'evt_lib_1',
      type: 'invoice.paid',
      createdAt: '2026-01-01T00:00:00.000Z',
      data: { invoiceId: 'inv_1' },
    });
    const signature = new StandardWebhook(SECRET).sign('evt_lib_1', new Date(NOW), body);
    const headers = {
      'webhook-id': 'evt_lib_1',
      'webhook-timestamp': String(T),
      'webhook-signature': signature,
    };
    expect(verify<Events>(body, headers, SECRET, { now: NOW })).toMatchObject({
      id: 'evt_lib_1',
      data: { invoiceId: 'inv_1' },
    });
    expect((await web.verifyAsync<Events>(body, new Headers(headers), SECRET, { now: NOW })).id).toBe(
      'evt_lib_1',
    );
  });

  it('signEvent’s delivery verifies with standardwebhooks’ and svix’s Webhook.verify, as a receiver calls them', async () => {
    const delivery = signEvent<Events>(paid, SECRET, SW);
    expect(Object.keys(delivery.headers).sort()).toEqual([
      'content-type',
      'webhook-id',
      'webhook-signature',
      'webhook-timestamp',
    ]);
    expect(delivery.headers).toMatchObject({ 'webhook-id': 'evt_sw_1', 'webhook-timestamp': String(T) });
    expect(new StandardWebhook(SECRET).verify(delivery.body, delivery.headers)).toEqual(delivery.event);
    expect(new SvixWebhook(SECRET).verify(delivery.body, delivery.headers)).toEqual(delivery.event);
    const fromWeb = await signEventAsync<Events>(paid, SECRET, { ...SW, now: NOW });
    expect(fromWeb).toEqual(delivery);
  });

  it('inside a rotation both signatures go out space-separated, and each secret verifies everywhere', () => {
    const delivery = signEvent<Events>(paid, [SECRET, OTHER_SECRET], SW);
    expect(delivery.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    for (const secret of [SECRET, OTHER_SECRET]) {
      expect(verify(delivery.body, delivery.headers, secret).id).toBe('evt_sw_1');
      expect(new StandardWebhook(secret).verify(delivery.body, delivery.headers)).toEqual(delivery.event);
      expect(new SvixWebhook(secret).verify(delivery.body, delivery.headers)).toEqual(delivery.event);
    }
    expect(verify(delivery.body, delivery.headers, [`whsec_${'0'.repeat(64)}`, OTHER_SECRET]).id).toBe(
      'evt_sw_1',
    );
  });

  describe('refused by ours and by both libraries', () => {
    const delivery = () => signEvent<Events>(paid, SECRET, SW);
    const WRONG = `whsec_${'0'.repeat(64)}`;
    const cases = [
      [
        'a tampered body',
        () => ({ ...delivery(), body: delivery().body.replace('inv_sw', 'inv_xx') }),
        SECRET,
        'signature_mismatch',
      ],
      ['a wrong secret', delivery, WRONG, 'signature_mismatch'],
      [
        'a stale timestamp',
        () => signEvent<Events>(paid, SECRET, { ...SW, now: NOW - 301_000 }),
        SECRET,
        'timestamp_out_of_tolerance',
      ],
      [
        'a timestamp from the future',
        () => signEvent<Events>(paid, SECRET, { ...SW, now: NOW + 301_000 }),
        SECRET,
        'timestamp_out_of_tolerance',
      ],
    ] as const;
    for (const [name, make, secret, code] of cases) {
      it(name, async () => {
        const { body, headers } = make();
        expect(codeOf(() => verify(body, headers, secret))).toBe(code);
        await expect(web.verifyAsync(body, headers, secret)).rejects.toMatchObject({ code });
        expect(() => new StandardWebhook(secret).verify(body, headers)).toThrow();
        expect(() => new SvixWebhook(secret).verify(body, headers)).toThrow();
      });
    }
  });
});

describe('which scheme is verified', () => {
  const keyhookDelivery = signEvent<Events>(paid, SECRET, { now: NOW });
  const standardDelivery = signEvent<Events>(paid, SECRET, { ...SW, now: NOW });

  it('is read from the signature header present, for whole headers', async () => {
    expect(verify(keyhookDelivery.body, keyhookDelivery.headers, SECRET).id).toBe('evt_sw_1');
    expect(verify(standardDelivery.body, standardDelivery.headers, SECRET).id).toBe('evt_sw_1');
    expect((await verifyAsync(standardDelivery.body, standardDelivery.headers, SECRET)).id).toBe('evt_sw_1');
  });

  it('is ambiguous with both signature headers, unless the option names one', () => {
    const both = { ...keyhookDelivery.headers, ...standardDelivery.headers };
    expect(() => verify(keyhookDelivery.body, both, SECRET)).toThrow(
      expect.objectContaining({
        code: 'malformed_header',
        message: expect.stringMatching(/both keyhook-signature and webhook-signature/),
      }),
    );
    expect(verify(keyhookDelivery.body, both, SECRET, { scheme: 'keyhook' }).id).toBe('evt_sw_1');
    expect(verify(keyhookDelivery.body, both, SECRET, SW).id).toBe('evt_sw_1');
  });

  it('with neither, is refused as missing_signature naming keyhook’s header, as before', () => {
    expect(() => verify(keyhookDelivery.body, { 'webhook-id': 'evt_sw_1' }, SECRET)).toThrow(
      expect.objectContaining({
        code: 'missing_signature',
        message: 'the keyhook-signature header is missing',
      }),
    );
    expect(() => verify(keyhookDelivery.body, { 'keyhook-signature': 't=1' }, SECRET, SW)).toThrow(
      expect.objectContaining({
        code: 'missing_signature',
        message: 'the webhook-signature header is missing',
      }),
    );
  });

  it('follows the option against the headers: the other scheme’s delivery is unsigned for it', () => {
    expect(
      codeOf(() => verify(standardDelivery.body, standardDelivery.headers, SECRET, { scheme: 'keyhook' })),
    ).toBe('missing_signature');
    expect(codeOf(() => verify(keyhookDelivery.body, keyhookDelivery.headers, SECRET, SW))).toBe(
      'missing_signature',
    );
  });

  it('treats webhook-id as the event id: signed, and it must be the body’s id', () => {
    const signature = new StandardWebhook(SECRET).sign('msg_other', new Date(NOW), standardDelivery.body);
    const headers = {
      'webhook-id': 'msg_other',
      'webhook-timestamp': String(T),
      'webhook-signature': signature,
    };
    expect(() => verifySignature(standardDelivery.body, headers, SECRET)).not.toThrow();
    expect(() => verify(standardDelivery.body, headers, SECRET)).toThrow(
      expect.objectContaining({
        code: 'event_id_mismatch',
        message: 'the webhook-id header is not the id of the signed event',
      }),
    );
  });

  it('reads malformed Standard Webhooks headers as malformed_header, and ignores other versions', () => {
    const { body, headers } = standardDelivery;
    const v1 = headers['webhook-signature']!;
    const variant = (patch: Record<string, string | undefined>) =>
      codeOf(() => verify(body, { ...headers, ...patch }, SECRET));
    expect(variant({ 'webhook-id': undefined })).toBe('malformed_header');
    expect(variant({ 'webhook-id': ' ' })).toBe('malformed_header');
    expect(variant({ 'webhook-timestamp': undefined })).toBe('malformed_header');
    expect(variant({ 'webhook-timestamp': '0x10' })).toBe('malformed_header');
    expect(variant({ 'webhook-timestamp': `${T}.5` })).toBe('malformed_header');
    expect(variant({ 'webhook-signature': 'v1,short' })).toBe('malformed_header');
    expect(variant({ 'webhook-signature': v1.replace(',', '=') })).toBe('malformed_header');
    // A v1a alone is well formed (an ed25519 signature), but a shared secret matches no v1.
    expect(variant({ 'webhook-signature': `v1a,${'A'.repeat(86)}==` })).toBe('signature_mismatch');
    expect(variant({ 'webhook-signature': `v2,${'A'.repeat(43)}=` })).toBe('malformed_header');
    expect(variant({ 'webhook-signature': `v1a,${'A'.repeat(86)}== ${v1}` })).toBe('ok');
    expect(variant({ 'webhook-signature': `v1,${'A'.repeat(43)}= ${v1}` })).toBe('ok');
    expect(variant({ 'webhook-signature': 'v1,x '.repeat(4096) })).toBe('malformed_header');
    expect(variant({ 'webhook-signature': Array(21).fill(v1).join(' ') })).toBe('malformed_header');
  });

  it('throws a TypeError for a mistaken call', () => {
    const { body, headers } = standardDelivery;
    expect(() => verify(body, headers['webhook-signature'], SECRET, SW)).toThrow(TypeError);
    expect(() => verify(body, headers, SECRET, { scheme: 'svix' as 'keyhook' })).toThrow(TypeError);
    expect(() => verify(body, headers, 'whsec_not*base64', SW)).toThrow(TypeError);
    expect(() => sign(body, SECRET, SW)).toThrow(TypeError);
    expect(() => sign(body, SECRET, { id: 'msg_1' })).toThrow(TypeError);
    expect(() => signEvent(paid, SECRET, { ...SW, headers: { signature: 'x-sig' } })).toThrow(TypeError);
  });
});

describe('the web entry', () => {
  it('verifyRequest reads a Standard Webhooks Request, and refuses it tampered', async () => {
    const delivery = await web.signEventAsync<Events>(paid, [OTHER_SECRET, SECRET], SW);
    const request = (body: string) =>
      new Request('http://127.0.0.1/webhooks', { method: 'POST', headers: delivery.headers, body });
    expect(await verifyRequest<Events>(request(delivery.body), SECRET)).toEqual(delivery.event);
    expect(await web.verifyRequest<Events>(request(delivery.body), OTHER_SECRET, SW)).toEqual(delivery.event);
    await expect(web.verifyRequest(request(`${delivery.body} `), SECRET)).rejects.toMatchObject({
      code: 'signature_mismatch',
    });
    expect(new SvixWebhook(SECRET).verify(delivery.body, delivery.headers)).toEqual(delivery.event);
  });
});
