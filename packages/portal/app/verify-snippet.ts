/**
 * How a receiver checks a delivery with @keyhook/webhook-verify, with this host's header names.
 * It is shown beside the catalog, for every endpoint, so it pins no scheme: verify() reads it from
 * the headers present, and the `headers` option names keyhook's only (webhook-verify's README).
 */
export function verifySnippet(headers: { signature: string; eventId: string }): string {
  return `import express from 'express';
import { verify } from '@keyhook/webhook-verify';

const app = express();
// The endpoint's whsec_… signing secret, or for an ed25519 endpoint its whpk_… public key.
const secret = process.env.WEBHOOK_SECRET;

// The raw body: verify() checks the signature over the exact bytes sent.
app.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
  // Either signature scheme: ${headers.signature} (keyhook), or webhook-id, webhook-timestamp
  // and webhook-signature (Standard Webhooks), read from the headers present. To accept only
  // your endpoint's, add scheme: 'keyhook' or scheme: 'standard-webhooks' below.
  const event = verify(req.body, req.headers, secret, {
    headers: { signature: '${headers.signature}', eventId: '${headers.eventId}' },
  });
  res.sendStatus(204); // answer at once, then handle event.type and event.data
});`;
}
