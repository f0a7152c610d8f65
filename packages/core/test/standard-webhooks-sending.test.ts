import { randomBytes } from 'node:crypto';
import { deliverOneEvent } from '@keyhook/testing/support';
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
