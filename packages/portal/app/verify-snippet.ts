/** How a receiver checks a delivery with @keyhook/webhook-verify, with this host's header names. */
export function verifySnippet(headers: { signature: string; eventId: string }): string {
  return `import express from 'express';
import { verify } from '@keyhook/webhook-verify';

const app = express();
const secret = process.env.WEBHOOK_SECRET; // the endpoint's whsec_… signing secret

// The raw body: verify() checks the signature over the exact bytes sent.
app.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
  const event = verify(req.body, req.headers, secret, {
    headers: { signature: '${headers.signature}', eventId: '${headers.eventId}' },
  });
  res.sendStatus(204); // answer at once, then handle event.type and event.data
});`;
}
