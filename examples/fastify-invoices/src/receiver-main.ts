import { createInvoiceReceiver } from './invoice-receiver.js';

// node dist/receiver-main.js: WEBHOOK_SECRET (the whsec_… from POST /admin/webhooks, required), RECEIVER_PORT (4000).
const secret = process.env['WEBHOOK_SECRET'];
if (!secret) {
  console.error('Set WEBHOOK_SECRET to the whsec_… secret that creating the webhook returned.');
  process.exit(1);
}
const port = Number(process.env['RECEIVER_PORT'] ?? 4000);
const server = createInvoiceReceiver({ secret });
server.listen(port, '127.0.0.1', () => console.log(`invoice webhook receiver on http://127.0.0.1:${port}`));
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => server.close(() => process.exit(0)));
}
