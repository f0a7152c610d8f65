import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isWebhookVerificationError, verify, type WebhookEvent } from '@keyhook/webhook-verify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventBody, SECRET, signatureHeader } from './wire-format.js';

const env = { KEYHOOK_WEBHOOK_SECRET: SECRET };
const received: WebhookEvent[] = [];
const handleEvent = (event: WebhookEvent) => received.push(event);

// recipe:next-pages
// pages/api/webhooks/keyhook.ts (NextApiRequest and NextApiResponse extend these Node types)
// Next.js must not parse this route's body: the signature is over the raw bytes.
export const config = { api: { bodyParser: false } };

export default async function handler(req: IncomingMessage, res: ServerResponse) {
  if (req.method !== 'POST') return res.writeHead(405, { allow: 'POST' }).end();
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    const event = verify(Buffer.concat(chunks), req.headers, env.KEYHOOK_WEBHOOK_SECRET);
    res.writeHead(204).end(); // answer at once; dedupe on event.id and do the work afterwards
    handleEvent(event);
  } catch (error) {
    if (!isWebhookVerificationError(error)) throw error;
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: error.code }));
  }
}
// recipe:end

// The handler as Next.js calls it: a Node request and response, over real HTTP.
let server: Server;
let url = '';
beforeAll(async () => {
  server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/webhooks/keyhook`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe('Next.js Pages Router recipe: bodyParser off, raw bytes from req', () => {
  const body = eventBody({ title: 'naïve' }, 'evt_next_1');

  it('accepts a signed POST, refuses a tampered one, and answers 405 to a GET', async () => {
    expect(config).toEqual({ api: { bodyParser: false } });
    received.length = 0;
    const headers = { 'content-type': 'application/json', 'keyhook-signature': signatureHeader(body) };
    expect((await fetch(url, { method: 'POST', headers, body })).status).toBe(204);
    expect(received).toEqual([JSON.parse(body)]);
    const tampered = await fetch(url, { method: 'POST', headers, body: `${body} ` });
    expect([tampered.status, await tampered.json()]).toEqual([400, { error: 'signature_mismatch' }]);
    expect((await fetch(url)).status).toBe(405);
  });
});
