import { catchUp } from './catch-up.js';
import { createReceiver, SeenEventIds } from './receiver.js';

/**
 * `WEBHOOK_SECRET=whsec_… npm start -w @keyhook/example-receiver`: logs every verified event.
 * With `KEYHOOK_API_URL` and `KEYHOOK_API_KEY` (a key with `events:read`) it first catches up with
 * the events feed, after `LAST_EVENT_ID` when set, and prints the id to start from next time.
 */
const secret = process.env['WEBHOOK_SECRET']?.trim();
if (!secret) {
  console.error('Set WEBHOOK_SECRET to the secret keyhook returned when the webhook was created.');
  process.exit(1);
}
const port = Number(process.env['PORT'] ?? 4000);
const seen = new SeenEventIds();
const handle = (event: { id: string; type: string; data: unknown }) =>
  console.log(`verified ${event.type} ${event.id}`, JSON.stringify(event.data));
const server = createReceiver({
  secret: secret.split(',').map((s) => s.trim()),
  seen,
  handle,
  onError: (error, event) => console.error(`handling ${event.id} failed`, error),
});
server.listen(port, '127.0.0.1', async () => {
  console.log(`receiver listening on http://127.0.0.1:${port}/`);
  const apiUrl = process.env['KEYHOOK_API_URL']?.trim();
  const apiKey = process.env['KEYHOOK_API_KEY']?.trim();
  if (!apiUrl || !apiKey) return;
  const caughtUp = await catchUp({
    apiUrl,
    apiKey,
    after: process.env['LAST_EVENT_ID']?.trim() || undefined,
    seen,
    handle,
  });
  console.log(
    `caught up: ${caughtUp.handled} events from the feed; next time LAST_EVENT_ID=${caughtUp.after ?? ''}`,
  );
});
