import { createReceiver } from './receiver.js';

/** `WEBHOOK_SECRET=whsec_… npm start -w @keyhook/example-receiver`: logs every verified event. */
const secret = process.env['WEBHOOK_SECRET']?.trim();
if (!secret) {
  console.error('Set WEBHOOK_SECRET to the secret keyhook returned when the webhook was created.');
  process.exit(1);
}
const port = Number(process.env['PORT'] ?? 4000);
const server = createReceiver({
  secret: secret.split(',').map((s) => s.trim()),
  handle: (event) => console.log(`verified ${event.type} ${event.id}`, JSON.stringify(event.data)),
  onError: (error, event) => console.error(`handling ${event.id} failed`, error),
});
server.listen(port, '127.0.0.1', () => console.log(`receiver listening on http://127.0.0.1:${port}/`));
