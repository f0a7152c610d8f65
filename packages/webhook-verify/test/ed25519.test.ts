import { generateKeyPairSync, type KeyObject, sign as signEd25519 } from 'node:crypto';
import { deliverOneEvent } from '@keyhook/testing/support';
import { sign, verify, verifyAsync, verifyRequest, verifySignature } from '@keyhook/webhook-verify';
import { describe, expect, it } from 'vitest';
import { SECRET } from './wire-format.js';

// docs/decisions.md §6.10: Standard Webhooks' asymmetric signatures. The deliveries below are
// signed here with node:crypto's own ed25519, apart from the one keyhook's worker sends.
const T = 1767225600;
const NOW = T * 1000;
const ID = 'evt_ed_1';
const BODY = JSON.stringify({
  id: ID,
  type: 'invoice.paid',
  createdAt: '2026-01-01T00:00:00.000Z',
  data: {},
});

function keyPair(): { privateKey: KeyObject; publicKey: string } {
  const pair = generateKeyPairSync('ed25519');
  // The SubjectPublicKeyInfo of an ed25519 key ends with its 32 bytes.
  const spki = pair.publicKey.export({ format: 'der', type: 'spki' });
  return {
    privateKey: pair.privateKey,
    publicKey: `whpk_${spki.subarray(spki.length - 32).toString('base64')}`,
  };
}

function v1a(privateKey: KeyObject, body = BODY, id = ID, t = T): string {
  return `v1a,${signEd25519(null, Buffer.from(`${id}.${t}.${body}`), privateKey).toString('base64')}`;
}

const headersOf = (signature: string, id = ID) => ({
  'webhook-id': id,
  'webhook-timestamp': String(T),
  'webhook-signature': signature,
});

const codeOf = async (call: () => unknown): Promise<unknown> => {
  try {
    await call();
    return 'ok';
  } catch (error) {
    return (error as { code?: unknown }).code ?? error;
  }
};

describe('ed25519 (v1a) deliveries, verified with the whpk_ public key', () => {
  const signer = keyPair();
  const other = keyPair();

  it('verify, verifyAsync, verifySignature and verifyRequest accept a v1a signature and answer the event', async () => {
    const headers = headersOf(v1a(signer.privateKey));
    expect(verify(BODY, headers, signer.publicKey, { now: NOW }).id).toBe(ID);
    expect(
      (await verifyAsync(new TextEncoder().encode(BODY), headers, signer.publicKey, { now: NOW })).id,
    ).toBe(ID);
    expect(() => verifySignature(BODY, headers, signer.publicKey, { now: NOW })).not.toThrow();
    const request = new Request('https://receiver.example/hooks', { method: 'POST', body: BODY, headers });
    expect((await verifyRequest(request, signer.publicKey, { now: NOW })).id).toBe(ID);
  });

  it('refuses another key, another body, another id and a stale time, with the codes HMAC deliveries get', async () => {
    const headers = headersOf(v1a(signer.privateKey));
    for (const check of [verify, verifyAsync] as const) {
      expect(await codeOf(() => check(BODY, headers, other.publicKey, { now: NOW }))).toBe(
        'signature_mismatch',
      );
      expect(await codeOf(() => check(`${BODY} `, headers, signer.publicKey, { now: NOW }))).toBe(
        'signature_mismatch',
      );
      expect(
        await codeOf(() =>
          check(BODY, { ...headers, 'webhook-id': 'evt_other' }, signer.publicKey, { now: NOW }),
        ),
      ).toBe('signature_mismatch');
      expect(await codeOf(() => check(BODY, headers, signer.publicKey, { now: NOW + 301_000 }))).toBe(
        'timestamp_out_of_tolerance',
      );
    }
  });

  it('inside a rotation overlap: a v1a and a v1 entry, each verified by its own key, and by a list of both', async () => {
    const hmac = sign(BODY, SECRET, { now: NOW, scheme: 'standard-webhooks', id: ID });
    const headers = headersOf(`${v1a(signer.privateKey)} ${hmac}`);
    for (const key of [
      signer.publicKey,
      SECRET,
      [other.publicKey, signer.publicKey],
      [SECRET, other.publicKey],
    ]) {
      expect(verify(BODY, headers, key, { now: NOW }).id).toBe(ID);
      expect((await verifyAsync(BODY, headers, key, { now: NOW })).id).toBe(ID);
    }
    // A public key does not verify a v1, nor a shared secret a v1a.
    expect(await codeOf(() => verify(BODY, headersOf(hmac), signer.publicKey, { now: NOW }))).toBe(
      'signature_mismatch',
    );
    expect(await codeOf(() => verify(BODY, headersOf(v1a(signer.privateKey)), SECRET, { now: NOW }))).toBe(
      'signature_mismatch',
    );
  });

  it('a malformed v1a is malformed_header; a header with neither version too', async () => {
    for (const signature of ['v1a,short', `v1a,${'A'.repeat(88)}`, 'v2,abc']) {
      expect(await codeOf(() => verify(BODY, headersOf(signature), signer.publicKey, { now: NOW }))).toBe(
        'malformed_header',
      );
    }
  });

  it('a public key is a TypeError where it cannot apply: a bad one, keyhook’s scheme, one header value, signing', () => {
    const headers = headersOf(v1a(signer.privateKey));
    for (const bad of ['whpk_', 'whpk_abc', `whpk_${Buffer.alloc(31).toString('base64')}`]) {
      expect(() => verify(BODY, headers, bad, { now: NOW })).toThrow(TypeError);
    }
    expect(() => verify(BODY, headers, signer.publicKey, { now: NOW, scheme: 'keyhook' })).toThrow(TypeError);
    expect(() => verify(BODY, headers['webhook-signature'], signer.publicKey, { now: NOW })).toThrow(
      TypeError,
    );
    expect(() => sign(BODY, signer.publicKey, { now: NOW })).toThrow(/cannot sign/);
  });
});

describe('interop: an ed25519 endpoint’s delivery, sent by keyhook’s worker', () => {
  it('verifies here with the public key the endpoint shows, and with nothing else', async () => {
    const event = { type: 'invoice.paid', data: { invoiceId: 'inv_ed' } };
    const { request, secret: publicKey, eventId } = await deliverOneEvent(event, { keyType: 'ed25519' });
    expect(publicKey).toMatch(/^whpk_/);
    expect(verify(request.body, request.headers, publicKey).id).toBe(eventId);
    expect((await verifyAsync(request.body, request.headers, publicKey)).id).toBe(eventId);
    expect(await codeOf(() => verify(request.body, request.headers, keyPair().publicKey))).toBe(
      'signature_mismatch',
    );
  });
});
