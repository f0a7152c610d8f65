import {
  isWebhookVerificationError,
  verifyAsync,
  verifyRequest,
  type WebhookEvent,
} from '@keyhook/webhook-verify/web';
import { describe, expect, it } from 'vitest';
import { eventBody, nowSeconds, SECRET, signatureHeader } from './wire-format.js';

const env = { KEYHOOK_WEBHOOK_SECRET: SECRET };
const received: WebhookEvent[] = [];
const handleEvent = async (event: WebhookEvent) => {
  received.push(event);
};

// recipe:web
export async function POST(request: Request): Promise<Response> {
  try {
    const event = await verifyRequest(request, env.KEYHOOK_WEBHOOK_SECRET);
    await handleEvent(event); // keep it quick: dedupe on event.id, queue the real work
    return new Response(null, { status: 204 });
  } catch (error) {
    if (!isWebhookVerificationError(error)) throw error;
    return Response.json({ error: error.code }, { status: 400 });
  }
}
// recipe:end

const body = eventBody({ title: 'Café ☕ 日本語 😀' }, 'evt_web_1');
const delivery = (payload: RequestInit['body'], headers: Record<string, string>) =>
  new Request('https://receiver.example/webhooks/keyhook', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'keyhook-event-id': 'evt_web_1', ...headers },
    body: payload,
    duplex: 'half',
  } as RequestInit);

describe('verifyRequest and the Web Request recipe (Next.js route handler, Workers)', () => {
  it('accepts a signed Request and hands over the event', async () => {
    received.length = 0;
    const response = await POST(delivery(body, { 'keyhook-signature': signatureHeader(body) }));
    expect(response.status).toBe(204);
    expect(received).toEqual([JSON.parse(body)]);
  });

  it('reads a streamed body of several chunks as the same bytes', async () => {
    const bytes = new TextEncoder().encode(body);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        // Split inside a multi-byte character, as a network read may.
        for (const at of [
          [0, 7],
          [7, bytes.length - 3],
          [bytes.length - 3, bytes.length],
        ] as const) {
          controller.enqueue(bytes.slice(at[0], at[1]));
        }
        controller.close();
      },
    });
    const event = await verifyRequest(
      delivery(stream, { 'keyhook-signature': signatureHeader(body) }),
      SECRET,
    );
    expect(event.id).toBe('evt_web_1');
  });

  it('answers 400 with the code for a tampered body, no header, or a stale timestamp', async () => {
    const cases: [Request, string][] = [
      [
        delivery(body.replace('evt_web_1', 'evt_web_2'), { 'keyhook-signature': signatureHeader(body) }),
        'signature_mismatch',
      ],
      [delivery(body, {}), 'missing_signature'],
      [
        delivery(body, { 'keyhook-signature': signatureHeader(body, SECRET, nowSeconds() - 301) }),
        'timestamp_out_of_tolerance',
      ],
    ];
    for (const [request, code] of cases) {
      const response = await POST(request);
      expect([response.status, await response.json()]).toEqual([400, { error: code }]);
    }
  });

  it('fails a genuine delivery when the body went through request.json() and back', async () => {
    const spaced = JSON.stringify(JSON.parse(body), null, 1);
    const request = delivery(spaced, { 'keyhook-signature': signatureHeader(spaced) });
    const reserialised = JSON.stringify(await request.json());
    await expect(
      verifyAsync(reserialised, request.headers.get('keyhook-signature'), SECRET),
    ).rejects.toMatchObject({
      code: 'signature_mismatch',
    });
  });

  it('refuses a Request whose body was already read, with a TypeError', async () => {
    const request = delivery(body, { 'keyhook-signature': signatureHeader(body) });
    await request.text();
    await expect(verifyRequest(request, SECRET)).rejects.toThrow(/already read/);
    const clone = delivery(body, { 'keyhook-signature': signatureHeader(body) });
    await clone.clone().json();
    await expect(verifyRequest(clone, SECRET)).resolves.toMatchObject({ id: 'evt_web_1' });
  });

  it('passes options through', async () => {
    const request = delivery(body, { 'keyhook-signature': signatureHeader(body, SECRET, 1767225600) });
    await expect(verifyRequest(request, [SECRET], { now: new Date(1767225600_000) })).resolves.toBeDefined();
  });
});
