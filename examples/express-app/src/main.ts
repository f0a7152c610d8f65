import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createExpressApp } from './app.js';

// node dist/main.js — PORT (3001), EXPRESS_APP_DB (./data/app.db), KEYHOOK_ADMIN_JWT_SECRET (required),
// KEYHOOK_ENCRYPTION_KEY (required in production; without it, secrets do not survive a restart).
const secret = process.env['KEYHOOK_ADMIN_JWT_SECRET'];
if (!secret) {
  console.error('Set KEYHOOK_ADMIN_JWT_SECRET (at least 32 bytes): the admin portal signs its JWTs with it.');
  process.exit(1);
}
const filename = process.env['EXPRESS_APP_DB'] ?? './data/app.db';
mkdirSync(path.dirname(filename), { recursive: true });
const { app, close } = createExpressApp({
  filename,
  adminSession: { secret },
  encryptionKey: process.env['KEYHOOK_ENCRYPTION_KEY'],
});
const port = Number(process.env['PORT'] ?? 3001);
const server = app.listen(port, '127.0.0.1', () => console.log(`express app on http://127.0.0.1:${port}`));
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    server.close(async () => {
      await close();
      process.exit(0);
    });
  });
}
