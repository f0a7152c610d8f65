import { spawnSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, randomBytes, verify } from 'node:crypto';
import { deliverOneEvent, inCi } from '@keyhook/testing/support';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { describe, expect, it } from 'vitest';

// docs/decisions.md §6.9: an endpoint may be signed the Standard Webhooks way; the two reference
// libraries must accept what keyhook sends with the secret exactly as keyhook shows it.
const event = { type: 'run.completed', data: { runId: 'run_1', note: 'ünïcödé ✓' } };

/** The three Standard Webhooks headers as a receiver got them. */
function standardHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  return {
    'webhook-id': String(headers['webhook-id']),
    'webhook-timestamp': String(headers['webhook-timestamp']),
    'webhook-signature': String(headers['webhook-signature']),
  };
}

/** Both libraries verify `body` with `secret`, and answer the event. */
function verifiedByBoth(secret: string, body: string, headers: Record<string, string>) {
  return [new StandardWebhook(secret).verify(body, headers), new SvixWebhook(secret).verify(body, headers)];
}

describe('Standard Webhooks deliveries (signatureScheme: standard-webhooks)', () => {
  it('carry webhook-id, webhook-timestamp and a v1 signature that standardwebhooks and svix accept', async () => {
    const { request, secret, eventId } = await deliverOneEvent(event, {
      signatureScheme: 'standard-webhooks',
    });
    const headers = standardHeaders(request.headers);
    expect(headers['webhook-id']).toBe(eventId);
    expect(headers['webhook-timestamp']).toMatch(/^[1-9][0-9]*$/);
    expect(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    // Not keyhook's own headers: a receiver sees one scheme only.
    expect(request.headers['keyhook-signature']).toBeUndefined();
    expect(request.headers['keyhook-event-id']).toBeUndefined();
    for (const received of verifiedByBoth(secret, request.body, headers)) {
      expect(received).toMatchObject({ id: eventId, type: 'run.completed', data: event.data });
    }
    // A changed body, or another secret, is refused by both.
    expect(() => new StandardWebhook(secret).verify(`${request.body} `, headers)).toThrow();
    expect(() => new SvixWebhook(secret).verify(`${request.body} `, headers)).toThrow();
    const other = `whsec_${'ab'.repeat(32)}`;
    expect(() => new StandardWebhook(other).verify(request.body, headers)).toThrow();
    expect(() => new SvixWebhook(other).verify(request.body, headers)).toThrow();
  });

  it('inside a rotation overlap carry both signatures, newest first, and both secrets verify with both libraries', async () => {
    const { request, secret, previousSecret } = await deliverOneEvent(event, {
      signatureScheme: 'standard-webhooks',
      rotate: { overlapSeconds: 3600 },
    });
    const headers = standardHeaders(request.headers);
    const entries = headers['webhook-signature']!.split(' ');
    expect(entries).toHaveLength(2);
    for (const key of [secret, previousSecret!]) {
      expect(verifiedByBoth(key, request.body, headers)).toHaveLength(2);
      // Each entry alone verifies with exactly one of the secrets: the newest is first.
      const alone = (entry: string) => ({ ...headers, 'webhook-signature': entry });
      const index = key === secret ? 0 : 1;
      expect(() => new StandardWebhook(key).verify(request.body, alone(entries[index]!))).not.toThrow();
      expect(() => new SvixWebhook(key).verify(request.body, alone(entries[1 - index]!))).toThrow();
    }
  });

  it('is the host default with delivery.signatureScheme, when create does not name a scheme', async () => {
    const { request, secret, eventId } = await deliverOneEvent(event, {
      defaultSignatureScheme: 'standard-webhooks',
    });
    const headers = standardHeaders(request.headers);
    expect(headers['webhook-id']).toBe(eventId);
    expect(verifiedByBoth(secret, request.body, headers)).toHaveLength(2);
  });

  it('a keyhook-scheme endpoint (the default) is sent keyhook headers only, as before', async () => {
    const { request, eventId } = await deliverOneEvent(event);
    expect(Object.keys(request.headers).filter((name) => name.startsWith('webhook-'))).toEqual([]);
    expect(request.headers['keyhook-event-id']).toBe(eventId);
    expect(String(request.headers['keyhook-signature'])).toMatch(/^t=[1-9][0-9]*,v1=[0-9a-f]{64}$/);
    const named = await deliverOneEvent(event, {
      signatureScheme: 'keyhook',
      defaultSignatureScheme: 'standard-webhooks',
    });
    expect(Object.keys(named.request.headers).filter((name) => name.startsWith('webhook-'))).toEqual([]);
    expect(named.request.headers['keyhook-event-id']).toBe(named.eventId);
  });
  it('sign with a secret the host already has (Svix issues whsec_ and base64 of 24 bytes): both libraries verify, under rotation too', async () => {
    const svixSecret = `whsec_${randomBytes(24).toString('base64')}`;
    const { request, secret } = await deliverOneEvent(event, {
      signatureScheme: 'standard-webhooks',
      secret: svixSecret,
    });
    expect(secret).toBe(svixSecret);
    expect(verifiedByBoth(svixSecret, request.body, standardHeaders(request.headers))).toHaveLength(2);

    const next = `whsec_${randomBytes(64).toString('base64')}`;
    const rotated = await deliverOneEvent(event, {
      signatureScheme: 'standard-webhooks',
      secret: svixSecret,
      rotate: { overlapSeconds: 3600, secret: next },
    });
    expect([rotated.secret, rotated.previousSecret]).toEqual([next, svixSecret]);
    for (const key of [next, svixSecret])
      expect(
        verifiedByBoth(key, rotated.request.body, standardHeaders(rotated.request.headers)),
      ).toHaveLength(2);
  });
});

// docs/decisions.md §6.10: an endpoint with an ed25519 key pair signs `v1a`, and its receivers
// verify with the public key alone. Checked here with code that shares nothing with keyhook's
// signer: node:crypto's own verify, and Python's `cryptography` (Debian's python3-cryptography).
const PYTHON = '/usr/bin/python3';
const pythonCanVerify =
  spawnSync(PYTHON, ['-c', 'import cryptography.hazmat.primitives.asymmetric.ed25519'], { stdio: 'ignore' })
    .status === 0;
if (!pythonCanVerify && inCi()) {
  throw new Error(`CI: ${PYTHON} with python3-cryptography is needed to check ed25519 signatures`);
}

/** The bytes a v1a signs, and each v1a signature's bytes. */
function v1a(body: string, headers: Record<string, string>) {
  const message = Buffer.from(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`);
  const signatures = headers['webhook-signature']!.split(' ')
    .filter((entry) => entry.startsWith('v1a,'))
    .map((entry) => Buffer.from(entry.slice(4), 'base64'));
  return { message, signatures };
}

/** node:crypto's verify, with the public key as an RFC 8410 SubjectPublicKeyInfo. */
function nodeVerifies(publicKey: string, message: Buffer, signature: Buffer): boolean {
  const raw = Buffer.from(publicKey.slice('whpk_'.length), 'base64');
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]);
  return verify(null, message, createPublicKey({ key: spki, format: 'der', type: 'spki' }), signature);
}

/** Python's cryptography: "ok" when the signature verifies, "bad" when it does not. */
function pythonVerifies(publicKey: string, message: Buffer, signature: Buffer): boolean {
  const script = [
    'import base64, sys',
    'from cryptography.exceptions import InvalidSignature',
    'from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey',
    'key, message, signature = (base64.b64decode(part) for part in sys.argv[1:4])',
    'try:',
    '    Ed25519PublicKey.from_public_bytes(key).verify(signature, message)',
    '    print("ok")',
    'except InvalidSignature:',
    '    print("bad")',
  ].join('\n');
  const run = spawnSync(PYTHON, [
    '-c',
    script,
    publicKey.slice('whpk_'.length),
    message.toString('base64'),
    signature.toString('base64'),
  ]);
  const answer = run.stdout.toString().trim();
  if (answer !== 'ok' && answer !== 'bad') throw new Error(`python: ${run.stderr.toString()}`);
  return answer === 'ok';
}

describe('ed25519 deliveries (keyType: ed25519)', () => {
  it('carry one v1a signature that node:crypto and Python verify with the whpk_ public key, and nothing else verifies', async () => {
    const { request, secret: publicKey, eventId } = await deliverOneEvent(event, { keyType: 'ed25519' });
    expect(publicKey).toMatch(/^whpk_[A-Za-z0-9+/]{43}=$/);
    const headers = standardHeaders(request.headers);
    expect(headers['webhook-id']).toBe(eventId);
    expect(headers['webhook-signature']).toMatch(/^v1a,[A-Za-z0-9+/]{86}==$/);
    const { message, signatures } = v1a(request.body, headers);
    expect(nodeVerifies(publicKey, message, signatures[0]!)).toBe(true);
    expect(nodeVerifies(publicKey, Buffer.concat([message, Buffer.from(' ')]), signatures[0]!)).toBe(false);
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' });
    expect(nodeVerifies(`whpk_${other.subarray(12).toString('base64')}`, message, signatures[0]!)).toBe(
      false,
    );
    if (pythonCanVerify) {
      expect(pythonVerifies(publicKey, message, signatures[0]!)).toBe(true);
      expect(pythonVerifies(publicKey, Buffer.concat([message, Buffer.from(' ')]), signatures[0]!)).toBe(
        false,
      );
    }
  });

  it('inside a rotation overlap carry both signatures, newest first: v1a and v1a, or v1a and the old v1', async () => {
    const pairs = await deliverOneEvent(event, {
      keyType: 'ed25519',
      rotate: { overlapSeconds: 3600 },
    });
    const both = v1a(pairs.request.body, standardHeaders(pairs.request.headers));
    expect(both.signatures).toHaveLength(2);
    expect(nodeVerifies(pairs.secret, both.message, both.signatures[0]!)).toBe(true);
    expect(nodeVerifies(pairs.previousSecret!, both.message, both.signatures[1]!)).toBe(true);
    if (pythonCanVerify)
      expect(pythonVerifies(pairs.previousSecret!, both.message, both.signatures[1]!)).toBe(true);

    // From a shared secret to a key pair: the old secret's v1 still verifies with Svix meanwhile.
    const moved = await deliverOneEvent(event, {
      signatureScheme: 'standard-webhooks',
      rotate: { overlapSeconds: 3600, keyType: 'ed25519' },
    });
    const headers = standardHeaders(moved.request.headers);
    expect(headers['webhook-signature']).toMatch(/^v1a,\S+ v1,\S+$/);
    const { message, signatures } = v1a(moved.request.body, headers);
    expect(nodeVerifies(moved.secret, message, signatures[0]!)).toBe(true);
    expect(verifiedByBoth(moved.previousSecret!, moved.request.body, headers)).toHaveLength(2);
  });
});
